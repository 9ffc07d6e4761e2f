package config

import (
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

var fileSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "database"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "defaults"},
		{Type: "queue", LabelNames: []string{"name"}},
		{Type: "job", LabelNames: []string{"name"}},
		{Type: "retention"},
		{Type: "http"},
	},
}

// withRetry returns attrs followed by the retry settings shared by defaults,
// queue and job blocks.
func withRetry(attrs ...hcl.AttributeSchema) []hcl.AttributeSchema {
	return append(attrs,
		hcl.AttributeSchema{Name: "max_retries"},
		hcl.AttributeSchema{Name: "backoff_base"},
		hcl.AttributeSchema{Name: "max_backoff"},
		hcl.AttributeSchema{Name: "timeout"},
		hcl.AttributeSchema{Name: "on_success"},
		hcl.AttributeSchema{Name: "on_failure"},
		hcl.AttributeSchema{Name: "on_dead"},
		hcl.AttributeSchema{Name: "hook_timeout"},
	)
}

var (
	defaultsSchema = &hcl.BodySchema{Attributes: withRetry()}
	queueSchema    = &hcl.BodySchema{Attributes: withRetry(hcl.AttributeSchema{Name: "concurrency"},
		hcl.AttributeSchema{Name: "max_running"}, hcl.AttributeSchema{Name: "rate_limit"})}
	jobSchema = &hcl.BodySchema{Attributes: withRetry(
		hcl.AttributeSchema{Name: "queue"},
		hcl.AttributeSchema{Name: "schedule", Required: true},
		hcl.AttributeSchema{Name: "time_zone"},
		hcl.AttributeSchema{Name: "command", Required: true},
		hcl.AttributeSchema{Name: "dir"},
		hcl.AttributeSchema{Name: "env"},
		hcl.AttributeSchema{Name: "overlap"},
		hcl.AttributeSchema{Name: "catch_up"},
		hcl.AttributeSchema{Name: "max_catch_up"},
		hcl.AttributeSchema{Name: "jitter"},
		hcl.AttributeSchema{Name: "priority"},
		hcl.AttributeSchema{Name: "enabled"},
		hcl.AttributeSchema{Name: "unique"},
	)}
)

// Limits of values, the same as the queue store applies when it enqueues a
// job, so that a file that validates never produces a job the store rejects.
const (
	maxRetriesLimit  = 1000
	backoffBaseMin   = 1.0
	backoffBaseMax   = 100.0
	maxBackoffLimit  = 30 * 24 * time.Hour
	maxTimeoutLimit  = 30 * 24 * time.Hour
	maxHookTimeout   = 24 * time.Hour // a hook holds its worker's slot
	maxPriorityLimit = 1_000_000
	maxNameLen       = 200
)

// validName reports whether s can name a queue or job: 1 to 200 bytes of
// printable characters without white space, as the queue store requires.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

type decoder struct {
	filename  string
	dir       string // absolute directory of the file, for relative paths
	opts      Options
	lookupEnv func(string) (string, bool)
	ctx       *hcl.EvalContext
	diags     hcl.Diagnostics
}

func newDecoder(filename string, opts Options) *decoder {
	lookupEnv := opts.LookupEnv
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	dir := filepath.Dir(filename)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &decoder{
		filename:  filename,
		dir:       dir,
		opts:      opts,
		lookupEnv: lookupEnv,
		ctx: &hcl.EvalContext{
			Variables: map[string]cty.Value{"var": cty.EmptyObjectVal, "local": cty.EmptyObjectVal},
			Functions: functions(lookupEnv),
		},
	}
}

func (d *decoder) decodeFile(body hcl.Body) *File {
	content, diags := body.Content(fileSchema)
	d.diags = append(d.diags, diags...)
	blocks := map[string]hcl.Blocks{}
	for _, b := range content.Blocks {
		blocks[b.Type] = append(blocks[b.Type], b)
	}

	d.ctx.Variables["var"] = cty.ObjectVal(d.decodeVariables(blocks["variable"]))
	d.ctx.Variables["local"] = cty.ObjectVal(d.decodeLocals(blocks["locals"]))

	f := &File{Path: d.filename}
	if attr, ok := content.Attributes["database"]; ok {
		f.Database = d.database(attr)
	}
	if b := d.onlyOne(blocks["defaults"]); b != nil {
		f.Defaults = d.decodeDefaults(b)
	}
	if b := d.onlyOne(blocks["retention"]); b != nil {
		f.Retention = d.decodeRetention(b)
	}
	if b := d.onlyOne(blocks["http"]); b != nil {
		f.HTTP = d.decodeHTTP(b)
	}

	// Collect queue names first so that jobs may refer to queues declared
	// further down.
	queues := map[string]hcl.Range{}
	var queueNames []string
	for _, b := range blocks["queue"] {
		q, ok := d.decodeQueue(b, queues)
		if !ok {
			continue
		}
		queues[q.Name] = b.DefRange
		queueNames = append(queueNames, q.Name)
		f.Queues = append(f.Queues, q)
	}
	if _, ok := queues[DefaultQueue]; !ok {
		f.Queues = append(f.Queues, Queue{Name: DefaultQueue, Concurrency: DefaultConcurrency, Implicit: true})
	}

	jobs := map[string]hcl.Range{}
	for _, b := range blocks["job"] {
		j, ok := d.decodeJob(b, jobs, queues, queueNames)
		if !ok {
			continue
		}
		jobs[j.Name] = b.DefRange
		f.Jobs = append(f.Jobs, j)
	}
	return f
}

// database resolves the database attribute; see File.Database.
func (d *decoder) database(attr *hcl.Attribute) string {
	s, ok := d.str(attr)
	if !ok || s == "" {
		return ""
	}
	switch {
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		return s
	case strings.Contains(s, "://"):
		d.attrError(attr, "Unsupported database URL",
			fmt.Sprintf("%q is neither a postgres:// URL nor a SQLite file path.", s))
		return ""
	case filepath.IsAbs(s):
		return filepath.Clean(s)
	default:
		return filepath.Join(d.dir, s)
	}
}

// onlyOne returns the first of blocks of a kind that may appear once (nil
// if there is none) and reports the others as duplicates.
func (d *decoder) onlyOne(blocks hcl.Blocks) *hcl.Block {
	if len(blocks) == 0 {
		return nil
	}
	for _, b := range blocks[1:] {
		d.errorAt(b.DefRange, "Duplicate "+b.Type+" block",
			fmt.Sprintf("Only one %s block is allowed; the first is at %s.", b.Type, pos(blocks[0].DefRange)))
	}
	return blocks[0]
}

func (d *decoder) decodeDefaults(b *hcl.Block) Retry {
	content, diags := b.Body.Content(defaultsSchema)
	d.diags = append(d.diags, diags...)
	return d.retry(content.Attributes)
}

// checkName validates the label of a queue or job block and reports a
// duplicate of one in seen.
func (d *decoder) checkName(b *hcl.Block, kind string, seen map[string]hcl.Range) bool {
	name := b.Labels[0]
	if !validName(name) {
		d.errorAt(b.LabelRanges[0], fmt.Sprintf("Invalid %s name", kind),
			fmt.Sprintf("%q is not a valid %s name: use 1 to %d printable characters without white space.", name, kind, maxNameLen))
		return false
	}
	if first, dup := seen[name]; dup {
		d.errorAt(b.LabelRanges[0], fmt.Sprintf("Duplicate %s", kind),
			fmt.Sprintf("A %s named %q is already defined; first defined at %s.", kind, name, pos(first)))
		return false
	}
	return true
}

// reservedEnvPrefix starts the variables queuectl sets for each job
// (queue.ReservedEnvPrefix; this package does not import queue).
const reservedEnvPrefix = "QUEUECTL_"

// retry decodes the retry settings present in attrs.
func (d *decoder) retry(attrs hcl.Attributes) Retry {
	var r Retry
	if attr, ok := attrs["max_retries"]; ok {
		if n, valid := d.intIn(attr, 0, maxRetriesLimit, fmt.Sprintf("from 0 to %d", maxRetriesLimit)); valid {
			r.MaxRetries = &n
		}
	}
	if attr, ok := attrs["backoff_base"]; ok {
		if f, valid := d.number(attr); valid {
			if f < backoffBaseMin || f > backoffBaseMax {
				d.attrError(attr, "Invalid backoff_base",
					fmt.Sprintf("backoff_base must be from %g to %g (the n-th retry waits backoff_base^n seconds), got %g.", backoffBaseMin, backoffBaseMax, f))
			} else {
				r.BackoffBase = &f
			}
		}
	}
	if attr, ok := attrs["max_backoff"]; ok {
		if v, valid := d.duration(attr); valid {
			if v <= 0 || v > maxBackoffLimit {
				d.attrError(attr, "Invalid max_backoff",
					fmt.Sprintf("max_backoff must be more than 0 and at most 30d, got %s.", v))
			} else {
				r.MaxBackoff = &v
			}
		}
	}
	if attr, ok := attrs["timeout"]; ok {
		if v, valid := d.duration(attr); valid {
			if v < 0 || v > maxTimeoutLimit || (v > 0 && v < time.Millisecond) {
				d.attrError(attr, "Invalid timeout",
					fmt.Sprintf("timeout must be 0 (no timeout) or from 1ms to 30d, got %s.", v))
			} else {
				r.Timeout = &v
			}
		}
	}
	if attr, ok := attrs["hook_timeout"]; ok {
		if v, valid := d.duration(attr); valid {
			if v < time.Millisecond || v > maxHookTimeout {
				d.attrError(attr, "Invalid hook_timeout",
					fmt.Sprintf("hook_timeout must be from 1ms to 24h, got %s.", v))
			} else {
				r.HookTimeout = &v
			}
		}
	}
	for _, h := range []struct {
		name string
		dst  *string
	}{{"on_success", &r.OnSuccess}, {"on_failure", &r.OnFailure}, {"on_dead", &r.OnDead}} {
		name, dst := h.name, h.dst
		if attr, ok := attrs[name]; ok {
			if s, valid := d.str(attr); valid {
				if strings.ContainsRune(s, 0) {
					d.attrError(attr, "Invalid hook", name+" must not contain a NUL character.")
				} else {
					*dst = s
				}
			}
		}
	}
	return r
}

// Value helpers. Each evaluates an attribute, reports problems as
// diagnostics on its value's range and returns ok=false when there is no
// usable value. A null value counts as "not set" and an unknown value (the
// result of an error reported elsewhere, such as a failed local) is skipped
// silently.

func (d *decoder) eval(attr *hcl.Attribute, ctx *hcl.EvalContext, ty cty.Type) (cty.Value, bool) {
	return d.evalMaybeRequired(attr, ctx, ty, false)
}

// evalMaybeRequired is eval, reporting a null value as an error if required.
func (d *decoder) evalMaybeRequired(attr *hcl.Attribute, ctx *hcl.EvalContext, ty cty.Type, required bool) (cty.Value, bool) {
	v, diags := attr.Expr.Value(ctx)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return cty.NilVal, false
	}
	if v.IsNull() {
		if required {
			d.attrError(attr, "Missing value", fmt.Sprintf("%s is required and must not be null.", attr.Name))
		}
		return cty.NilVal, false
	}
	if ty == cty.DynamicPseudoType {
		return v, true
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		d.attrError(attr, "Incorrect attribute value type",
			fmt.Sprintf("Inappropriate value for attribute %q: %s required, got %s.", attr.Name, ty.FriendlyName(), v.Type().FriendlyName()))
		return cty.NilVal, false
	}
	return cv, true
}

func (d *decoder) evalString(attr *hcl.Attribute, ctx *hcl.EvalContext) (string, bool) {
	v, ok := d.eval(attr, ctx, cty.String)
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

func (d *decoder) str(attr *hcl.Attribute) (string, bool) { return d.evalString(attr, d.ctx) }

// requiredStr is str for a required attribute, which must not be null.
func (d *decoder) requiredStr(attr *hcl.Attribute) (string, bool) {
	v, ok := d.evalMaybeRequired(attr, d.ctx, cty.String, true)
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

func (d *decoder) boolean(attr *hcl.Attribute) (bool, bool) {
	v, ok := d.eval(attr, d.ctx, cty.Bool)
	if !ok {
		return false, false
	}
	return v.True(), true
}

func (d *decoder) number(attr *hcl.Attribute) (float64, bool) {
	v, ok := d.eval(attr, d.ctx, cty.Number)
	if !ok {
		return 0, false
	}
	f, _ := v.AsBigFloat().Float64()
	if math.IsInf(f, 0) {
		d.attrError(attr, "Number out of range", fmt.Sprintf("%s is too large.", attr.Name))
		return 0, false
	}
	return f, true
}

func (d *decoder) integer(attr *hcl.Attribute) (int, bool) {
	v, ok := d.eval(attr, d.ctx, cty.Number)
	if !ok {
		return 0, false
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		d.attrError(attr, "Invalid "+attr.Name, fmt.Sprintf("%s must be a whole number, got %s.", attr.Name, bf.Text('g', -1)))
		return 0, false
	}
	n, acc := bf.Int64()
	if acc != big.Exact || n < math.MinInt32 || n > math.MaxInt32 {
		d.attrError(attr, "Number out of range", fmt.Sprintf("%s must be between %d and %d.", attr.Name, math.MinInt32, math.MaxInt32))
		return 0, false
	}
	return int(n), true
}

// intIn decodes attr as a whole number from lo to hi, or reports that it
// must be within rng (the range as users read it, "at least 1").
func (d *decoder) intIn(attr *hcl.Attribute, lo, hi int, rng string) (int, bool) {
	n, valid := d.integer(attr)
	if valid && (n < lo || n > hi) {
		d.attrError(attr, "Invalid "+attr.Name, fmt.Sprintf("%s must be %s, got %d.", attr.Name, rng, n))
		return 0, false
	}
	return n, valid
}

// duration accepts a duration string (ParseDuration) or a number of seconds.
func (d *decoder) duration(attr *hcl.Attribute) (time.Duration, bool) {
	v, ok := d.eval(attr, d.ctx, cty.DynamicPseudoType)
	if !ok {
		return 0, false
	}
	switch v.Type() {
	case cty.Number:
		secs, _ := v.AsBigFloat().Float64()
		if math.Abs(secs) > math.MaxInt64/float64(time.Second) {
			d.attrError(attr, "Invalid duration", fmt.Sprintf("%s is out of range.", attr.Name))
			return 0, false
		}
		return time.Duration(math.Round(secs * float64(time.Second))), true
	case cty.String:
		dur, err := ParseDuration(v.AsString())
		if err != nil {
			d.attrError(attr, "Invalid duration", fmt.Sprintf("%s: %v.", attr.Name, err))
			return 0, false
		}
		return dur, true
	default:
		d.attrError(attr, "Incorrect attribute value type",
			fmt.Sprintf("Inappropriate value for attribute %q: a duration string such as \"10m\" or a number of seconds required, got %s.", attr.Name, v.Type().FriendlyName()))
		return 0, false
	}
}

func (d *decoder) stringMap(attr *hcl.Attribute) (map[string]string, bool) {
	v, ok := d.eval(attr, d.ctx, cty.Map(cty.String))
	if !ok {
		return nil, false
	}
	m := make(map[string]string, v.LengthInt())
	for k, e := range v.AsValueMap() {
		if e.IsNull() {
			d.attrError(attr, "Invalid environment variable value", fmt.Sprintf("The value of %s is null.", k))
			return nil, false
		}
		m[k] = e.AsString()
	}
	return m, true
}

// oneOf returns the attribute's string value if it is one of allowed.
func (d *decoder) oneOf(attr *hcl.Attribute, allowed ...string) (string, bool) {
	s, ok := d.str(attr)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	d.attrError(attr, "Invalid "+attr.Name+" value",
		fmt.Sprintf("%q is not a valid %s value; use %s.", s, attr.Name, alternatives(allowed)))
	return "", false
}

// attrError reports an error on the attribute's value. The expression and
// context let the diagnostic writer show the variables the value came from.
func (d *decoder) attrError(attr *hcl.Attribute, summary, detail string) {
	d.attrDiag(hcl.DiagError, attr, summary, detail)
}

// attrWarning reports a value that is valid but likely not what the user
// means; validate and run show it and go on.
func (d *decoder) attrWarning(attr *hcl.Attribute, summary, detail string) {
	d.attrDiag(hcl.DiagWarning, attr, summary, detail)
}

func (d *decoder) attrDiag(sev hcl.DiagnosticSeverity, attr *hcl.Attribute, summary, detail string) {
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity:    sev,
		Summary:     summary,
		Detail:      detail,
		Subject:     attr.Expr.Range().Ptr(),
		Expression:  attr.Expr,
		EvalContext: d.ctx,
	})
}

func (d *decoder) errorAt(rng hcl.Range, summary, detail string) {
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   detail,
		Subject:  rng.Ptr(),
	})
}

// pos formats the start of a range as "file:line,column".
func pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d,%d", r.Filename, r.Start.Line, r.Start.Column)
}
