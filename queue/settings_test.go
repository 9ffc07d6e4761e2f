package queue_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"500ms", 500 * time.Millisecond},
		{"1d", 24 * time.Hour},
		{"2d12h", 60 * time.Hour},
		{"1d30m", 24*time.Hour + 30*time.Minute},
		{"0d", 0},
		{"30", 30 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"0", 0},
		{" 45s ", 45 * time.Second},
		{"1.5d", 36 * time.Hour}, // the configuration file's syntax: one parser for both
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := queue.ParseDuration(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("ParseDuration(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
			}
		})
	}

	bad := []string{"", "   ", "abc", "1x", "d", "-1d", "-5m", "1d2", "1dd", "2d5x", "5 m", "NaN", "Inf", "1e300", "36501d", "36500d2562047h"}
	for _, in := range bad {
		t.Run("bad "+in, func(t *testing.T) {
			got, err := queue.ParseDuration(in)
			if !errors.Is(err, queue.ErrInvalid) {
				t.Fatalf("ParseDuration(%q) = %s, %v; want ErrInvalid", in, got, err)
			}
			if strings.TrimSpace(in) != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", strings.TrimSpace(in))) {
				t.Errorf("error %q should quote the whole input %q", err, in)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0"},
		{90 * time.Second, "1m30s"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{5 * time.Minute, "5m"},
		{24 * time.Hour, "1d"},
		{30 * 24 * time.Hour, "30d"},
		{36 * time.Hour, "36h"},
		{1500 * time.Millisecond, "1.5s"},
		{250 * time.Millisecond, "250ms"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			got := queue.FormatDuration(tc.in)
			if got != tc.want {
				t.Fatalf("FormatDuration(%s) = %q, want %q", tc.in, got, tc.want)
			}
			back, err := queue.ParseDuration(got)
			if err != nil || back != tc.in {
				t.Errorf("ParseDuration(FormatDuration(%s)) = %s, %v; want a round trip", tc.in, back, err)
			}
		})
	}
}

func TestNormalizeKey(t *testing.T) {
	for _, in := range []string{"max-retries", "max_retries", "MAX_RETRIES", " Max-Retries "} {
		got, err := queue.NormalizeKey(in)
		if err != nil || got != "max-retries" {
			t.Errorf("NormalizeKey(%q) = %q, %v; want max-retries", in, got, err)
		}
	}
	_, err := queue.NormalizeKey("retries")
	if !errors.Is(err, queue.ErrInvalid) {
		t.Fatalf("unknown key: want ErrInvalid, got %v", err)
	}
	for _, k := range queue.SettingKeys() {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error %q does not name valid key %s", err, k)
		}
	}
}

func TestCheckSetting(t *testing.T) {
	tests := []struct {
		key, value string
		wantKey    string
		wantValue  string
	}{
		{"max_retries", "5", "max-retries", "5"},
		{"max-retries", " 0 ", "max-retries", "0"},
		{"max-retries", "1000", "max-retries", "1000"},
		{"backoff_base", "2.50", "backoff-base", "2.5"},
		{"backoff-base", "1", "backoff-base", "1"},
		{"max-backoff", "90", "max-backoff", "1m30s"},
		{"max-backoff", "1d", "max-backoff", "1d"},
		{"timeout", "0", "timeout", "none"},
		{"timeout", "none", "timeout", "none"},
		{"timeout", "1h30m", "timeout", "1h30m"},
		{"timeout", "1ms", "timeout", "1ms"},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			k, v, err := queue.CheckSetting(tc.key, tc.value)
			if err != nil || k != tc.wantKey || v != tc.wantValue {
				t.Errorf("CheckSetting(%q, %q) = %q, %q, %v; want %q, %q", tc.key, tc.value, k, v, err, tc.wantKey, tc.wantValue)
			}
		})
	}

	bad := []struct {
		key, value string
		mentions   string // the allowed range
	}{
		{"max_retries", "-1", "0 to 1000"},
		{"max-retries", "1001", "0 to 1000"},
		{"max-retries", "2.5", "0 to 1000"},
		{"max-retries", "many", "0 to 1000"},
		{"backoff-base", "0.5", "1 to 100"},
		{"backoff-base", "101", "1 to 100"},
		{"backoff-base", "NaN", "1 to 100"},
		{"max-backoff", "500ms", "1s to 30d"},
		{"max-backoff", "31d", "1s to 30d"},
		{"timeout", "-5", "1ms to 30d"},
		{"timeout", "31d", "1ms to 30d"},
		{"timeout", "soon", "1ms to 30d"},
		{"timeout", "1ns", "1ms to 30d"}, // shorter than a job's timeout may be
		{"timeout", "999us", "1ms to 30d"},
	}
	for _, tc := range bad {
		t.Run("bad "+tc.key+"="+tc.value, func(t *testing.T) {
			_, _, err := queue.CheckSetting(tc.key, tc.value)
			if !errors.Is(err, queue.ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.mentions) || !strings.Contains(err.Error(), tc.value) {
				t.Errorf("error %q should name the value and the allowed range %q", err, tc.mentions)
			}
		})
	}

	if _, _, err := queue.CheckSetting("colour", "blue"); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("unknown key: want ErrInvalid, got %v", err)
	}
}

func TestSettingsFrom(t *testing.T) {
	s, err := queue.SettingsFrom(map[string]string{
		"max-retries": "7", "timeout": "5m", "from-a-newer-binary": "whatever",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := queue.Settings{MaxRetries: 7, BackoffBase: 2, MaxBackoff: time.Hour, Timeout: 5 * time.Minute}
	if s != want {
		t.Errorf("settings %+v, want %+v", s, want)
	}
	if d := queue.DefaultSettings(); d != (queue.Settings{MaxRetries: 3, BackoffBase: 2, MaxBackoff: time.Hour}) {
		t.Errorf("defaults changed: %+v", d)
	}
	// A key spelled the way NormalizeKey accepts is applied, not refused.
	s, err = queue.SettingsFrom(map[string]string{"max_retries": "4", "Backoff_Base": "3"})
	if err != nil || s.MaxRetries != 4 || s.BackoffBase != 3 {
		t.Errorf("non-canonical keys: %+v, %v; want max retries 4, base 3", s, err)
	}
	if _, err := queue.SettingsFrom(map[string]string{"backoff-base": "0"}); !errors.Is(err, queue.ErrInvalid) {
		t.Errorf("bad stored value: want ErrInvalid, got %v", err)
	}
	for _, k := range queue.SettingKeys() {
		if queue.SettingHelp(k) == "" {
			t.Errorf("key %s has no help", k)
		}
	}
}
