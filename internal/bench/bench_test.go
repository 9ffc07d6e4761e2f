package bench

import "testing"

// TestPass: a figure passes at a ratio of 1 (or better) unless it names
// the ratio it needs, as the large-table rate does.
func TestPass(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want bool
	}{
		{"no baseline", Result{Ratio: 0.1, Better: "higher"}, true},
		{"higher, at 1", Result{Base: 10, Ratio: 1, Better: "higher"}, true},
		{"higher, under 1", Result{Base: 10, Ratio: 0.99, Better: "higher"}, false},
		{"lower, over 1", Result{Base: 10, Ratio: 1.01, Better: "lower"}, false},
		{"lower, under 1", Result{Base: 10, Ratio: 0.5, Better: "lower"}, true},
		{"needs 0.67, has 0.89", Result{Base: 10, Ratio: 0.89, Better: "higher", Need: 1 / 1.5}, true},
		{"needs 0.67, has 0.6", Result{Base: 10, Ratio: 0.6, Better: "higher", Need: 1 / 1.5}, false},
	}
	for _, tc := range tests {
		if got := tc.r.Pass(); got != tc.want {
			t.Errorf("%s: Pass() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
