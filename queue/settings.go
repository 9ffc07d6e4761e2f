package queue

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/duration"
)

// Settings are the defaults copied onto a job at enqueue time. They live in
// the store's config table; a queue (from the HCL file) and the job itself
// may override them.
type Settings struct {
	MaxRetries  int
	BackoffBase float64
	MaxBackoff  time.Duration
	Timeout     time.Duration // 0: no timeout
}

// DefaultSettings are used when the config table holds nothing.
func DefaultSettings() Settings {
	return Settings{MaxRetries: 3, BackoffBase: 2, MaxBackoff: time.Hour}
}

// setting describes one config key: how to parse, check and show it.
type setting struct {
	key   string
	help  string
	apply func(s *Settings, v string) error
	show  func(s Settings) string
}

// Limits of the settings; documented in the README and CLI help.
const (
	MaxRetriesLimit  = 1000
	BackoffBaseMin   = 1.0
	BackoffBaseMax   = 100.0
	MaxBackoffLimit  = 30 * 24 * time.Hour
	MaxTimeoutLimit  = 30 * 24 * time.Hour
	MaxPriorityLimit = 1_000_000
)

var settingsTable = []setting{
	{"max-retries", fmt.Sprintf("retries after the first attempt, 0..%d", MaxRetriesLimit),
		func(s *Settings, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > MaxRetriesLimit {
				return fmt.Errorf("must be a whole number from 0 to %d", MaxRetriesLimit)
			}
			s.MaxRetries = n
			return nil
		}, func(s Settings) string { return strconv.Itoa(s.MaxRetries) }},
	{"backoff-base", fmt.Sprintf("delay after the n-th failure is base^n seconds, %g..%g", BackoffBaseMin, BackoffBaseMax),
		func(s *Settings, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || f < BackoffBaseMin || f > BackoffBaseMax {
				return fmt.Errorf("must be a number from %g to %g", BackoffBaseMin, BackoffBaseMax)
			}
			s.BackoffBase = f
			return nil
		}, func(s Settings) string { return strconv.FormatFloat(s.BackoffBase, 'g', -1, 64) }},
	{"max-backoff", "cap on the retry delay, a duration from 1s to 30d",
		func(s *Settings, v string) error {
			d, err := ParseDuration(v)
			if err != nil || d < time.Second || d > MaxBackoffLimit {
				return fmt.Errorf("must be a duration from 1s to 30d")
			}
			s.MaxBackoff = d
			return nil
		}, func(s Settings) string { return FormatDuration(s.MaxBackoff) }},
	{"timeout", "default job timeout, a duration from 1ms to 30d; none (or 0) for none",
		func(s *Settings, v string) error {
			if v == "none" {
				s.Timeout = 0
				return nil
			}
			d, err := ParseDuration(v)
			// The range a job's own timeout has (CheckTimeout): a default
			// outside it would make every enqueue fail.
			if err != nil || d < 0 || CheckTimeout(d) != nil {
				return fmt.Errorf("must be none (or 0), or a duration from 1ms to 30d")
			}
			s.Timeout = d
			return nil
		}, func(s Settings) string {
			if s.Timeout == 0 {
				return "none" // as show writes a job without one
			}
			return FormatDuration(s.Timeout)
		}},
}

// NormalizeKey maps a user-typed key (max_retries, MAX-RETRIES) to its
// canonical form, or returns ErrInvalid naming the valid keys.
func NormalizeKey(key string) (string, error) {
	k := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(key), "_", "-"))
	for _, s := range settingsTable {
		if s.key == k {
			return k, nil
		}
	}
	return "", fmt.Errorf("%w: unknown config key %q (valid: %s)", ErrInvalid, key, strings.Join(SettingKeys(), ", "))
}

// SettingKeys lists the canonical config keys.
func SettingKeys() []string {
	keys := make([]string, len(settingsTable))
	for i, s := range settingsTable {
		keys[i] = s.key
	}
	return keys
}

// SettingHelp describes the allowed values of a canonical key.
func SettingHelp(key string) string {
	for _, s := range settingsTable {
		if s.key == key {
			return s.help
		}
	}
	return ""
}

// CheckSetting validates value for key and returns the canonical key and value.
func CheckSetting(key, value string) (string, string, error) {
	k, err := NormalizeKey(key)
	if err != nil {
		return "", "", err
	}
	s := DefaultSettings()
	if err := s.set(k, strings.TrimSpace(value)); err != nil {
		return "", "", err
	}
	return k, s.Get(k), nil
}

func (s *Settings) set(key, value string) error {
	for _, st := range settingsTable {
		if st.key == key {
			if err := st.apply(s, value); err != nil {
				return fmt.Errorf("%w: config %s=%q: %s", ErrInvalid, key, value, err.Error())
			}
			return nil
		}
	}
	return fmt.Errorf("%w: unknown config key %q", ErrInvalid, key)
}

// Get shows the value of a canonical key.
func (s Settings) Get(key string) string {
	for _, st := range settingsTable {
		if st.key == key {
			return st.show(s)
		}
	}
	return ""
}

// SettingsFrom overlays stored key/values on the defaults. Unknown keys are
// ignored (a newer binary may have written them); bad values are an error.
func SettingsFrom(kv map[string]string) (Settings, error) {
	s := DefaultSettings()
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key, err := NormalizeKey(k)
		if err != nil {
			continue
		}
		if err := s.set(key, kv[k]); err != nil {
			return s, err
		}
	}
	return s, nil
}

// maxDuration bounds durations given on the command line: a hundred years.
const maxDuration = 36500 * 24 * time.Hour

// ParseDuration parses a duration in the syntax of package duration (shared
// with the configuration file): "90s", "1h30m", "1d12h", "1.5d", or a plain
// number of seconds ("30", "1.5"). Negative durations and ones over a
// hundred years are refused.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("%w: empty duration", ErrInvalid)
	}
	d, err := duration.Parse(in)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%w: duration %q (use e.g. 90s, 5m, 2h, 1d)", ErrInvalid, in)
	case d < 0:
		return 0, fmt.Errorf("%w: duration %q is negative", ErrInvalid, in)
	case d > maxDuration:
		return 0, fmt.Errorf("%w: duration %q is longer than %s", ErrInvalid, in, FormatDuration(maxDuration))
	}
	return d, nil
}

// invalidError is ErrInvalid for an error whose message says what is
// invalid already ("invalid rate limit …"), without saying it twice.
type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }

// FormatDuration shows d compactly ("1h", "90s", "1d").
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
