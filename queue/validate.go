package queue

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ReservedEnvPrefix starts the names of the variables queuectl sets for a
// job (QUEUECTL_JOB_ID, QUEUECTL_ATTEMPT, ...). A worker finds the leftover
// processes of a killed worker by them, so a job may not set any of its own.
const ReservedEnvPrefix = "QUEUECTL_"

// MaxArgLen is the longest command, and the longest NAME=value of a job's
// env, that can reach the job: Linux refuses to start a process given a
// longer single argument or variable (MAX_ARG_STRLEN, 128 KiB with its
// NUL), so a longer one would fail every attempt with "argument list too
// long".
const MaxArgLen = 128<<10 - 1

// MaxEnvSize bounds a job's env in all, its NAME=value strings with their
// NULs: Linux starts a process only when its arguments and environment
// together fit in a quarter of the stack limit (2 MiB by default), and the
// worker's own environment and the job's command take their share too.
const MaxEnvSize = 1 << 20

// MinTimeout is the shortest timeout a job may have; 0 means none.
const MinTimeout = time.Millisecond

// maxRunAt is the latest run_at a job may have: stores and JSON keep
// four-digit years.
var maxRunAt = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

const maxNameLen = 200

// CheckName validates a job id or queue name: 1..200 bytes of valid UTF-8,
// printable, without white space.
func CheckName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if len(s) > maxNameLen {
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalid, what, maxNameLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalid, what, s)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("%w: %s %q contains white space or control characters", ErrInvalid, what, s)
		}
	}
	return nil
}

// CheckEnv validates a job's environment: names non-empty without "=" or
// NUL and not starting with ReservedEnvPrefix, values without NUL, all
// valid UTF-8 (the environment is stored as JSON, which would replace the
// other bytes).
func CheckEnv(env map[string]string) error {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case k == "":
			return fmt.Errorf("%w: env: a variable name is empty", ErrInvalid)
		case strings.ContainsAny(k, "=\x00"):
			return fmt.Errorf("%w: env: variable name %q contains \"=\" or NUL", ErrInvalid, k)
		case strings.HasPrefix(k, ReservedEnvPrefix):
			return fmt.Errorf("%w: env: variable %s: names starting with %s are reserved for queuectl", ErrInvalid, k, ReservedEnvPrefix)
		case !utf8.ValidString(k):
			return fmt.Errorf("%w: env: variable name %q is not valid UTF-8", ErrInvalid, k)
		case strings.ContainsRune(env[k], 0):
			return fmt.Errorf("%w: env: the value of %s contains NUL", ErrInvalid, k)
		case !utf8.ValidString(env[k]):
			return fmt.Errorf("%w: env: the value of %s is not valid UTF-8", ErrInvalid, k)
		case len(k)+1+len(env[k]) > MaxArgLen:
			return fmt.Errorf("%w: env: %s=… is %d bytes, over the %d a process can be given", ErrInvalid, k, len(k)+1+len(env[k]), MaxArgLen)
		}
	}
	if n := EnvSize(env); n > MaxEnvSize {
		return fmt.Errorf("%w: env: the variables are %d bytes in all, over the %d a job may carry (a process is given at most 2 MiB of arguments and environment, the worker's own included)", ErrInvalid, n, MaxEnvSize)
	}
	return nil
}

// EnvSize is the size env takes in a process's environment: each
// NAME=value with its NUL.
func EnvSize(env map[string]string) int {
	n := 0
	for k, v := range env {
		n += len(k) + len(v) + 2
	}
	return n
}

// CheckDir validates a job's working directory: "" (inherit) or an
// absolute path of valid UTF-8 (PostgreSQL cannot store other text) without
// NUL. Whether it exists is checked when the job runs.
func CheckDir(dir string) error {
	switch {
	case dir == "":
		return nil
	case strings.ContainsRune(dir, 0):
		return fmt.Errorf("%w: dir contains NUL", ErrInvalid)
	case !utf8.ValidString(dir):
		return fmt.Errorf("%w: dir %q is not valid UTF-8", ErrInvalid, dir)
	case !filepath.IsAbs(dir):
		return fmt.Errorf("%w: dir %q is not an absolute path", ErrInvalid, dir)
	}
	return nil
}

// CheckTimeout validates a job timeout: 0 (none) or MinTimeout..MaxTimeoutLimit.
func CheckTimeout(d time.Duration) error {
	if d != 0 && (d < MinTimeout || d > MaxTimeoutLimit) {
		return fmt.Errorf("%w: timeout %s out of range %s..%s (0 means none)", ErrInvalid, FormatDuration(d), FormatDuration(MinTimeout), FormatDuration(MaxTimeoutLimit))
	}
	return nil
}

// CheckRunAt validates a job's run_at: not beyond the year 9999.
func CheckRunAt(t time.Time) error {
	if t.After(maxRunAt) {
		return fmt.Errorf("%w: run_at %s is beyond the year 9999", ErrInvalid, t.UTC().Format(time.RFC3339))
	}
	return nil
}

// Limits of a job's shape.
const (
	MaxAfter       = 100 // jobs one job may run after
	MaxLabels      = 50
	MaxLabelValue  = 1000 // bytes
	MaxUniqueFor   = 366 * 24 * time.Hour
	labelKeyFormat = "1..200 bytes without white space, \"=\" or control characters"
)

// CheckLabels validates a job's labels: at most MaxLabels, keys like names
// and without "=", values printable and at most MaxLabelValue bytes.
func CheckLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("%w: labels: at most %d", ErrInvalid, MaxLabels)
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if CheckName("label", k) != nil || strings.Contains(k, "=") {
			return fmt.Errorf("%w: label %q: a key is %s", ErrInvalid, k, labelKeyFormat)
		}
		v := labels[k]
		if len(v) > MaxLabelValue || !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) {
			return fmt.Errorf("%w: label %s: the value must be printable UTF-8 of at most %d bytes", ErrInvalid, k, MaxLabelValue)
		}
	}
	return nil
}

// ParseLabels reads "key=value" items (as given to --label, or to a list's
// filter); nil for none. More keys than a job may carry are refused: they
// would match no job. So is a key given twice with different values: a
// job holds one value per key, and the last one silently winning would
// label or match what the caller did not ask for.
func ParseLabels(items []string) (map[string]string, error) {
	var out map[string]string
	for _, s := range items {
		key, value, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("%w: label %q: use key=value", ErrInvalid, s)
		}
		if CheckName("label", key) != nil {
			return nil, fmt.Errorf("%w: label %q: a key is %s", ErrInvalid, s, labelKeyFormat)
		}
		if out == nil {
			out = map[string]string{}
		}
		if prev, ok := out[key]; ok && prev != value {
			return nil, fmt.Errorf("%w: label %s given twice, as %q and %q: a job holds one value per key", ErrInvalid, key, prev, value)
		}
		out[key] = value
		if len(out) > MaxLabels {
			return nil, fmt.Errorf("%w: labels: at most %d", ErrInvalid, MaxLabels)
		}
	}
	return out, nil
}
