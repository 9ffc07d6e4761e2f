package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
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
	// maxArgLen bounds a command and an env entry NAME=value: Linux starts
	// no process given a longer argument or variable.
	maxArgLen = 128<<10 - 1
	// maxEnvSize bounds a job's env in all (queue.MaxEnvSize).
	maxEnvSize = 1 << 20
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
