package storekit

import (
	"slices"
	"testing"
)

func TestFindCycle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edges [][2]string
		want  []string
	}{
		{"none", nil, nil},
		{"a chain", [][2]string{{"c", "b"}, {"b", "a"}}, nil},
		{"a diamond", [][2]string{{"d", "b"}, {"d", "c"}, {"b", "a"}, {"c", "a"}}, nil},
		{"itself", [][2]string{{"a", "a"}}, []string{"a", "a"}},
		{"two", [][2]string{{"x", "y"}, {"y", "x"}}, []string{"x", "y", "x"}},
		{"three behind a chain", [][2]string{{"top", "x"}, {"x", "y"}, {"y", "z"}, {"z", "x"}, {"z", "free"}},
			[]string{"x", "y", "z", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := findCycle(tc.edges); !slices.Equal(got, tc.want) {
				t.Errorf("findCycle(%v) = %v, want %v", tc.edges, got, tc.want)
			}
		})
	}
}

func TestDescribeCycle(t *testing.T) {
	if got := describeCycle([]string{"x", "y", "x"}); got != `"x" runs after "y" runs after "x"` {
		t.Errorf("short: %s", got)
	}
	long := []string{"a", "b", "c", "d", "e", "f", "g", "h", "a"}
	if got := describeCycle(long); got != `"a" runs after "b" runs after "c" runs after … runs after "g" runs after "h" runs after "a" (8 jobs)` {
		t.Errorf("long: %s", got)
	}
}
