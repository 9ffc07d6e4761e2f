package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions returns the functions available in expressions: env() and an
// allow-list of pure cty stdlib functions. Nothing touches the filesystem or
// the network.
func functions(lookupEnv func(string) (string, bool)) map[string]function.Function {
	return map[string]function.Function{
		"env":        envFunc(lookupEnv),
		"coalesce":   coalesceFunc,
		"concat":     stdlib.ConcatFunc,
		"contains":   stdlib.ContainsFunc,
		"format":     stdlib.FormatFunc,
		"join":       stdlib.JoinFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"keys":       stdlib.KeysFunc,
		"length":     lengthFunc,
		"lookup":     stdlib.LookupFunc,
		"lower":      stdlib.LowerFunc,
		"max":        stdlib.MaxFunc,
		"min":        stdlib.MinFunc,
		"replace":    stdlib.ReplaceFunc,
		"split":      stdlib.SplitFunc,
		"substr":     stdlib.SubstrFunc,
		"title":      stdlib.TitleFunc,
		"tobool":     stdlib.MakeToFunc(cty.Bool),
		"tonumber":   stdlib.MakeToFunc(cty.Number),
		"tostring":   stdlib.MakeToFunc(cty.String),
		"trimspace":  stdlib.TrimSpaceFunc,
		"upper":      stdlib.UpperFunc,
		"values":     stdlib.ValuesFunc,
	}
}

// envFunc is env(name): the value of an environment variable, "" if unset.
func envFunc(lookupEnv func(string) (string, bool)) function.Function {
	return function.New(&function.Spec{
		Description: `Returns the value of an environment variable, or "" if it is not set.`,
		Params:      []function.Parameter{{Name: "name", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			v, _ := lookupEnv(args[0].AsString())
			return cty.StringVal(v), nil
		},
	})
}

// coalesceFunc is coalesce(a, b, ...): the first argument that is neither
// null nor an empty string, so that coalesce(env("X"), "fallback") works.
// (stdlib's CoalesceFunc only skips nulls.)
var coalesceFunc = function.New(&function.Spec{
	Description: "Returns the first argument that is neither null nor an empty string.",
	VarParam: &function.Parameter{
		Name:             "vals",
		Type:             cty.DynamicPseudoType,
		AllowNull:        true,
		AllowDynamicType: true,
	},
	Type: func(args []cty.Value) (cty.Type, error) {
		if len(args) == 0 {
			return cty.NilType, errors.New("at least one argument is required")
		}
		types := make([]cty.Type, len(args))
		for i, a := range args {
			types[i] = a.Type()
		}
		ty, _ := convert.UnifyUnsafe(types)
		if ty == cty.NilType {
			return cty.NilType, errors.New("all arguments must have the same type")
		}
		return ty, nil
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		for _, a := range args {
			v, err := convert.Convert(a, retType)
			if err != nil {
				return cty.NilVal, err
			}
			if v.IsNull() || (retType == cty.String && v.AsString() == "") {
				continue
			}
			return v, nil
		}
		return cty.NilVal, errors.New("no argument is non-null and non-empty")
	},
})

// lengthFunc is length(x) for strings (in characters) as well as lists, sets,
// tuples, maps and objects; stdlib's LengthFunc rejects strings and objects.
var lengthFunc = function.New(&function.Spec{
	Description: "Returns the number of characters of a string or the number of elements of a collection.",
	Params:      []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType}},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		if ty == cty.String || ty == cty.DynamicPseudoType || ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType() {
			return cty.Number, nil
		}
		return cty.NilType, function.NewArgErrorf(0, "length() needs a string, list, set, tuple, map or object, not %s", ty.FriendlyName())
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v := args[0]
		switch ty := v.Type(); {
		case ty == cty.String:
			return stdlib.Strlen(v)
		case ty.IsObjectType():
			return cty.NumberIntVal(int64(len(ty.AttributeTypes()))), nil
		default:
			return v.Length(), nil
		}
	},
})

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "default"}, {Name: "description"}},
}

// decodeVariables evaluates the variable blocks: Options.Vars, then
// QUEUECTL_VAR_<name>, then the default.
func (d *decoder) decodeVariables(blocks hcl.Blocks) map[string]cty.Value {
	vars := map[string]cty.Value{}
	defined := map[string]hcl.Range{}
	constCtx := &hcl.EvalContext{Functions: d.ctx.Functions} // defaults cannot refer to var or local
	for _, b := range blocks {
		name := b.Labels[0]
		content, diags := b.Body.Content(variableSchema)
		d.diags = append(d.diags, diags...)
		if !hclsyntax.ValidIdentifier(name) {
			d.errorAt(b.LabelRanges[0], "Invalid variable name",
				fmt.Sprintf("%q is not a valid variable name: use letters, digits, \"_\" and \"-\", not starting with a digit or \"-\".", name))
			continue
		}
		if first, dup := defined[name]; dup {
			d.errorAt(b.LabelRanges[0], "Duplicate variable",
				fmt.Sprintf("Variable %q is already defined; first defined at %s.", name, pos(first)))
			continue
		}
		defined[name] = b.DefRange

		if attr, ok := content.Attributes["description"]; ok {
			d.evalString(attr, constCtx)
		}
		def, hasDefault := cty.NilVal, false
		if attr, ok := content.Attributes["default"]; ok {
			v, diags := attr.Expr.Value(constCtx)
			d.diags = append(d.diags, diags...)
			switch {
			case diags.HasErrors():
				def, hasDefault = cty.DynamicVal, true // reported; do not cascade
			case !v.IsNull():
				def, hasDefault = v, true
			}
		}

		raw, given := d.opts.Vars[name]
		source := "--var " + name
		if !given {
			raw, given = d.lookupEnv(EnvVarPrefix + name)
			source = "environment variable " + EnvVarPrefix + name
		}
		switch {
		case given && hasDefault:
			vars[name] = d.override(b, name, raw, source, def)
		case given:
			vars[name] = cty.StringVal(raw)
		case hasDefault:
			vars[name] = def
		default:
			d.errorAt(b.DefRange, "Missing value for variable",
				fmt.Sprintf("Variable %q has no default; set it with --var %s=VALUE or the environment variable %s%s.", name, name, EnvVarPrefix, name))
			vars[name] = cty.DynamicVal
		}
	}

	var undeclared []string
	for name := range d.opts.Vars {
		if _, ok := defined[name]; !ok {
			undeclared = append(undeclared, name)
		}
	}
	sort.Strings(undeclared)
	severity := hcl.DiagError
	if d.opts.UndeclaredVarsWarn {
		severity = hcl.DiagWarning
	}
	for _, name := range undeclared {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: severity,
			Summary:  "Value for undeclared variable",
			Detail:   fmt.Sprintf("A value was given for variable %q (--var %s=...), but %s declares no such variable.", name, name, d.filename),
		})
	}
	return vars
}

// override converts a string given on the command line or in the environment
// to the type of the variable's default, if that is a number or a bool.
func (d *decoder) override(b *hcl.Block, name, raw, source string, def cty.Value) cty.Value {
	v := cty.StringVal(raw)
	if !def.IsKnown() {
		return v
	}
	ty := def.Type()
	if !ty.IsPrimitiveType() {
		d.errorAt(b.DefRange, "Invalid value for variable",
			fmt.Sprintf("Variable %q has a default of type %s, so it cannot be set from a string by %s.", name, ty.FriendlyName(), source))
		return cty.DynamicVal
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		d.errorAt(b.DefRange, "Invalid value for variable",
			fmt.Sprintf("The value %q given by %s is not a valid %s, as the default of variable %q requires.", raw, source, ty.FriendlyName(), name))
		return cty.DynamicVal
	}
	return cv
}

// decodeLocals evaluates the attributes of all locals blocks in dependency
// order and reports reference cycles. d.ctx must hold var already.
func (d *decoder) decodeLocals(blocks hcl.Blocks) map[string]cty.Value {
	order, attrs := d.collectLocals(blocks)
	evalOrder, cyclic := d.orderLocals(order, attrs)
	locals := map[string]cty.Value{}
	for name := range cyclic {
		locals[name] = cty.DynamicVal
	}
	for _, a := range evalOrder {
		if cyclic[a.Name] {
			continue
		}
		d.ctx.Variables["local"] = cty.ObjectVal(locals)
		v, diags := a.Expr.Value(d.ctx)
		d.diags = append(d.diags, diags...)
		if diags.HasErrors() {
			v = cty.DynamicVal
		}
		locals[a.Name] = v
	}
	return locals
}

// collectLocals gathers the local values of every locals block in file
// order, reporting duplicates.
func (d *decoder) collectLocals(blocks hcl.Blocks) (order []*hcl.Attribute, attrs map[string]*hcl.Attribute) {
	attrs = map[string]*hcl.Attribute{}
	for _, b := range blocks {
		as, diags := b.Body.JustAttributes()
		d.diags = append(d.diags, diags...)
		sorted := make([]*hcl.Attribute, 0, len(as))
		for _, a := range as {
			sorted = append(sorted, a)
		}
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Range.Start.Byte < sorted[j].Range.Start.Byte })
		for _, a := range sorted {
			if first, dup := attrs[a.Name]; dup {
				d.errorAt(a.NameRange, "Duplicate local value",
					fmt.Sprintf("Local value %q is already defined; first defined at %s.", a.Name, pos(first.NameRange)))
				continue
			}
			attrs[a.Name] = a
			order = append(order, a)
		}
	}

	return order, attrs
}

// orderLocals returns the order in which local values must be evaluated
// (each after those it refers to) and the names caught in a reference loop,
// which are reported.
func (d *decoder) orderLocals(order []*hcl.Attribute, attrs map[string]*hcl.Attribute) (evalOrder []*hcl.Attribute, cyclic map[string]bool) {
	// Depth-first search in file order; evaluation order is the post-order.
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	cyclic = map[string]bool{}
	var stack []string
	var visit func(a *hcl.Attribute)
	visit = func(a *hcl.Attribute) {
		state[a.Name] = visiting
		stack = append(stack, a.Name)
		for _, dep := range localRefs(a.Expr) {
			next, ok := attrs[dep]
			if !ok {
				continue // evaluation reports the unknown name
			}
			switch state[dep] {
			case visiting:
				i := len(stack) - 1
				for stack[i] != dep {
					i--
				}
				cycle := append(append([]string{}, stack[i:]...), dep)
				for _, n := range cycle {
					cyclic[n] = true
				}
				d.diags = append(d.diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Circular reference in locals",
					Detail:   fmt.Sprintf("Local values refer to each other in a loop: local.%s.", strings.Join(cycle, " -> local.")),
					Subject:  attrs[dep].Expr.Range().Ptr(), // where the listed loop starts
				})
			case unvisited:
				visit(next)
			}
		}
		stack = stack[:len(stack)-1]
		state[a.Name] = done
		evalOrder = append(evalOrder, a)
	}
	for _, a := range order {
		if state[a.Name] == unvisited {
			visit(a)
		}
	}

	return evalOrder, cyclic
}

// localRefs returns the names of the locals expr refers to, in source order.
func localRefs(expr hcl.Expression) []string {
	var names []string
	for _, tr := range expr.Variables() {
		if tr.RootName() != "local" || len(tr) < 2 {
			continue
		}
		if attr, ok := tr[1].(hcl.TraverseAttr); ok {
			names = append(names, attr.Name)
		}
	}
	return names
}
