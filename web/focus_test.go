package web

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// luminance is the relative luminance of a colour written #rrggbb (WCAG 2).
func luminance(t *testing.T, hex string) float64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil || len(hex) != 7 {
		t.Fatalf("colour %q is not #rrggbb", hex)
	}
	lin := func(c uint64) float64 {
		s := float64(c) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(v>>16) + 0.7152*lin(v>>8&0xff) + 0.0722*lin(v&0xff)
}

// contrast is the WCAG contrast ratio of two colours.
func contrast(t *testing.T, a, b string) float64 {
	t.Helper()
	la, lb := luminance(t, a), luminance(t, b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

// The keyboard focus ring stands out at least 3:1 from the backgrounds it
// is drawn on (WCAG 2.2 non-text contrast): it was #a5b4fc, 1.8:1 on the
// page. The dark top bar has a ring of its own.
func TestFocusRingContrast(t *testing.T) {
	css, err := staticFS.ReadFile("static/app.css")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z0-9-]+):\s*(#[0-9a-fA-F]{6});`).FindAllStringSubmatch(string(css), -1) {
		vars[m[1]] = m[2]
	}
	for _, c := range []struct{ ring, on string }{
		{"focus", "bg"}, {"focus", "panel"}, {"focus", "line"}, {"focus-on-top", "top"},
	} {
		if vars[c.ring] == "" || vars[c.on] == "" {
			t.Fatalf("app.css sets no --%s or --%s: %v", c.ring, c.on, vars)
		}
		if r := contrast(t, vars[c.ring], vars[c.on]); r < 3 {
			t.Errorf("the focus ring --%s (%s) on --%s (%s): %.2f:1, want at least 3:1", c.ring, vars[c.ring], c.on, vars[c.on], r)
		}
	}
	// The text of a disabled job's row, dimmed, still reads 4.5:1.
	if r := contrast(t, vars["ink-2"], vars["panel"]); r < 4.5 || !strings.Contains(string(css), ".grid tr.disabled td { color: var(--ink-2); }") {
		t.Errorf("a disabled job's row is not in --ink-2 (%.2f:1 on --panel)", r)
	}
	for _, rule := range []string{
		":focus-visible, input:focus, select:focus, textarea:focus { outline: 2px solid var(--focus);",
		".topbar :focus-visible { outline-color: var(--focus-on-top); }",
	} {
		if !strings.Contains(string(css), rule) {
			t.Errorf("app.css lacks the rule %q", rule)
		}
	}
}
