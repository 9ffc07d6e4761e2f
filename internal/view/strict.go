package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// JobFields are the JSON names of JobSpec's fields: the members a job
// object may have.
var JobFields = FieldNames(reflect.TypeFor[JobSpec]())

// FieldNames are the JSON names of the fields of t, a struct type.
func FieldNames(t reflect.Type) map[string]bool {
	m := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
}

// DecodeObject decodes b, one JSON object, into v, a pointer to a struct
// whose members' names are known, more strictly than encoding/json does
// alone. A member whose name is not exactly one of known is an error
// (encoding/json matches names whatever their case), as is a member given
// twice (encoding/json keeps the last, so that a proxy or a log that read
// the first would be misled about what runs) and anything after the
// object. The members named in stringObjects are objects of strings (a
// job's env and labels): a key given twice in one is an error too, and so
// is a null value, which the decoder would take for "". It returns nil, or
// the fault: the field it is about ("" when the document as a whole is)
// and what is wrong.
func DecodeObject(b []byte, v any, known map[string]bool, stringObjects ...string) *SpecError {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		field, msg := JSONError(err)
		return &SpecError{Field: field, Msg: msg}
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) > 0 {
		return &SpecError{Msg: "trailing data after the object"}
	}
	return checkMembers(b, known, stringObjects)
}

// checkMembers checks, in one pass over the object at the start of b
// (valid JSON, as a decoder found it), the names of its own members (each
// exactly one of known, and given once) and the keys and values of the
// members named in stringObjects (each key once, no null). It returns nil,
// or the fault.
func checkMembers(b []byte, known map[string]bool, stringObjects []string) *SpecError {
	var buf [16][]byte
	seen := buf[:0] // the object's own names
	member := ""    // the member whose value is being read
	var keys map[string]bool
	key := "" // keys: those of the string object being read, and its last
	depth, atName := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			j := closingQuote(b, i)
			if j < 0 {
				return nil // not valid JSON: the decoder said so first
			}
			str := b[i : j+1]
			i = j
			if atName {
				name, ok := unquote(str)
				if !ok {
					return nil
				}
				atName = false
				if depth == 2 {
					key = string(name)
					if keys[key] {
						return &SpecError{Field: member, Msg: fmt.Sprintf("field %q has the key %q twice", member, key)}
					}
					keys[key] = true
					break
				}
				if !known[string(name)] {
					return unknownMember(string(name), known)
				}
				for _, n := range seen {
					if bytes.Equal(n, name) {
						return &SpecError{Field: string(name), Msg: fmt.Sprintf("field %q is given twice", name)}
					}
				}
				seen = append(seen, name)
				member = string(name)
			}
		case 'n': // outside a string, in a string object: its value is null
			if depth == 2 && keys != nil {
				return &SpecError{Field: member, Msg: fmt.Sprintf("field %q must be an object of strings; the value of %q is null", member, key)}
			}
		case '{', '[':
			depth++
			keys = nil
			if depth == 2 && c == '{' && slices.Contains(stringObjects, member) {
				keys = map[string]bool{}
			}
			atName = c == '{' && (depth == 1 || keys != nil)
		case '}', ']':
			if depth--; depth == 0 {
				return nil
			}
			keys = nil
		case ',':
			atName = depth == 1 || depth == 2 && keys != nil
		}
	}
	return nil
}

// unquote is the text of the JSON string s, quotes included; ok is false
// when it is not one.
func unquote(s []byte) (text []byte, ok bool) {
	if bytes.IndexByte(s, '\\') < 0 {
		return s[1 : len(s)-1], true
	}
	var t string
	if json.Unmarshal(s, &t) != nil {
		return nil, false
	}
	return []byte(t), true
}

// closingQuote is the index of the quote that ends the string whose
// opening quote is at b[i], or -1.
func closingQuote(b []byte, i int) int {
	for j := i + 1; ; j++ {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		n := 0 // backslashes before it: an odd number escapes it
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j
		}
	}
}

// unknownMember is the fault of a member name that is not a field's; one
// that differs from a field's only in case says which it means.
func unknownMember(name string, known map[string]bool) *SpecError {
	for k := range known {
		if strings.EqualFold(k, name) {
			return &SpecError{Field: name, Msg: fmt.Sprintf("unknown field %q (field names are lower case: %q)", name, k)}
		}
	}
	return &SpecError{Field: name, Msg: fmt.Sprintf("unknown field %q", name)}
}
