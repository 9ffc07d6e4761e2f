package queue_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/queuectl/queuectl/queue"
)

func TestParseLabels(t *testing.T) {
	for _, tc := range []struct {
		items []string
		want  map[string]string
		err   string
	}{
		{nil, nil, ""},
		{[]string{"team=infra", "tier=1"}, map[string]string{"team": "infra", "tier": "1"}, ""},
		{[]string{"team=infra", "team=infra"}, map[string]string{"team": "infra"}, ""},
		{[]string{"empty="}, map[string]string{"empty": ""}, ""},
		{[]string{"team=infra", "team=web"}, nil, `label team given twice, as "infra" and "web"`},
		{[]string{"team"}, nil, `label "team": use key=value`},
		{[]string{"bad key=v"}, nil, `label "bad key=v": a key is`},
	} {
		got, err := queue.ParseLabels(tc.items)
		if tc.err != "" {
			if !errors.Is(err, queue.ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseLabels(%q): %v, want an error with %q", tc.items, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("ParseLabels(%q) = %v, %v; want %v", tc.items, got, err, tc.want)
		}
	}
}
