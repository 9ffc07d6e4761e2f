package queue

import "testing"

func TestLiveNews(t *testing.T) {
	tests := []struct {
		name    string
		output  string
		written int64
		seen    int64
		want    string
	}{
		{"all new", "abc", 3, 0, "abc"},
		{"some new", "abcdef", 6, 4, "ef"},
		{"tail of a longer output", "xyz", 10, 8, "yz"},
		{"more new than the tail holds", "xyz", 10, 2, "\n[queuectl: 5 bytes of output not shown]\nxyz"},
		{"nothing new", "abc", 3, 3, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := LiveNews(&LiveOutput{Output: []byte(tc.output), Written: tc.written}, tc.seen)
			if string(got) != tc.want {
				t.Errorf("LiveNews = %q, want %q", got, tc.want)
			}
		})
	}
}
