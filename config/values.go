package config

import (
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

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

// intIn decodes attr as a whole number from lo to hi, or reports that it
// must be within rng (the range as users read it, "at least 1"). A number
// beyond 32 bits is out of range too, reported with the attribute's range
// (or, when that has no upper end, the largest whole number allowed).
func (d *decoder) intIn(attr *hcl.Attribute, lo, hi int, rng string) (int, bool) {
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
		if bf.Sign() > 0 && hi > math.MaxInt32 {
			rng = fmt.Sprintf("at most %d", math.MaxInt32)
		}
		d.attrError(attr, "Number out of range", fmt.Sprintf("%s must be %s, got %s.", attr.Name, rng, bf.Text('g', -1)))
		return 0, false
	}
	if int(n) < lo || int(n) > hi {
		d.attrError(attr, "Invalid "+attr.Name, fmt.Sprintf("%s must be %s, got %d.", attr.Name, rng, n))
		return 0, false
	}
	return int(n), true
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
	if key, rng, dup := duplicateKey(attr.Expr, d.ctx); dup {
		// HCL keeps the last of two: a reader of the file who sees the
		// first would be misled about what the job gets.
		d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate key",
			Detail: fmt.Sprintf("The key %q is given twice; give it once.", key), Subject: rng.Ptr()})
		return nil, false
	}
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

// duplicateKey finds a key an object written in the file ({ A = "1", A =
// "2" }) gives twice, and the range of its second use.
func duplicateKey(expr hcl.Expression, ctx *hcl.EvalContext) (string, hcl.Range, bool) {
	obj, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return "", hcl.Range{}, false
	}
	seen := map[string]bool{}
	for _, item := range obj.Items {
		k, diags := item.KeyExpr.Value(ctx)
		if diags.HasErrors() || !k.IsWhollyKnown() || k.IsNull() {
			continue // reported when the object is evaluated
		}
		k, err := convert.Convert(k, cty.String)
		if err != nil {
			continue
		}
		if seen[k.AsString()] {
			return k.AsString(), item.KeyExpr.Range(), true
		}
		seen[k.AsString()] = true
	}
	return "", hcl.Range{}, false
}
