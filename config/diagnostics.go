package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// WriteDiagnostics renders diags as text with hcl's diagnostic writer: for
// each one the severity and summary, the file, line and column, the source
// lines of its subject, the values of the variables involved, and the detail.
// Lines are not wrapped and no color is used.
//
// sources maps a filename, as it appears in the diagnostics, to the bytes it
// was parsed from (Parse's src). Files missing from sources are read from
// disk, so after Load pass nil; a file that cannot be read is rendered
// without its source lines.
func WriteDiagnostics(w io.Writer, sources map[string][]byte, diags hcl.Diagnostics) error {
	files := map[string]*hcl.File{}
	for _, diag := range diags {
		if diag.Subject == nil {
			continue
		}
		name := diag.Subject.Filename
		if _, done := files[name]; done {
			continue
		}
		src, ok := sources[name]
		if !ok {
			src, _ = os.ReadFile(name) // nil: rendered without a snippet
		}
		// Parsing again gives the writer the navigation it uses to name the
		// enclosing block ("in job \"backup\"").
		file, _ := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		if file == nil {
			file = &hcl.File{}
		}
		file.Bytes = src
		files[name] = file
	}

	var buf bytes.Buffer
	wr := hcl.NewDiagnosticTextWriter(&buf, files, 0, false)
	for _, diag := range diags {
		buf.Reset()
		if err := wr.WriteDiagnostic(diag); err != nil {
			return err
		}
		out := buf.String()
		if s := diag.Subject; s != nil {
			// hcl's header names the line only; add the column.
			header := fmt.Sprintf("  on %s line %d", s.Filename, s.Start.Line)
			out = strings.Replace(out, header, fmt.Sprintf("%s, column %d", header, s.Start.Column), 1)
		}
		if _, err := io.WriteString(w, out); err != nil {
			return err
		}
	}
	return nil
}

// sortDiagnostics orders diagnostics by position, those without a subject
// first, so that they read top to bottom regardless of decoding order.
func sortDiagnostics(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		default:
			return a.Start.Byte < b.Start.Byte
		}
	})
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// alternatives formats values as `"a", "b" or "c"`.
func alternatives(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
