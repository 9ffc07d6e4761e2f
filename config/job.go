package config

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/queuectl/queuectl/scheduler/cronspec"
)

// decodeJob decodes a job block; see decodeQueue.
func (d *decoder) decodeJob(b *hcl.Block, seen, queues map[string]hcl.Range, queueNames []string) (j Job, ok bool) {
	ok = d.checkName(b, "job", seen)
	content, diags := b.Body.Content(jobSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	j = Job{
		Name:       b.Labels[0],
		Queue:      DefaultQueue,
		TimeZone:   DefaultTimeZone,
		Overlap:    DefaultOverlap,
		CatchUp:    DefaultCatchUp,
		MaxCatchUp: DefaultMaxCatchUp,
		Enabled:    true,
	}

	d.jobSchedule(&j, attrs, queues, queueNames)
	d.jobCommand(&j, attrs)
	d.jobPolicy(&j, attrs)
	j.Retry = d.retry(attrs)
	return j, ok
}

// jobSchedule decodes where and when a job runs: its queue, which must be
// declared, its time zone and its schedule, checked in that zone.
func (d *decoder) jobSchedule(j *Job, attrs hcl.Attributes, queues map[string]hcl.Range, queueNames []string) {
	if attr, found := attrs["queue"]; found {
		if s, valid := d.str(attr); valid {
			j.Queue = s
			if _, declared := queues[s]; !declared && s != DefaultQueue {
				d.attrError(attr, "Undeclared queue", undeclaredQueueDetail(s, queueNames))
			}
		}
	}

	loc := time.UTC
	if attr, found := attrs["time_zone"]; found {
		if s, valid := d.str(attr); valid {
			if l, err := loadLocation(s); err != nil {
				d.attrError(attr, "Invalid time zone", fmt.Sprintf(
					"%s: use an IANA time zone name such as \"Europe/Berlin\", \"America/New_York\" or \"UTC\".", capitalize(err.Error())))
			} else {
				j.TimeZone, loc = s, l
			}
		}
	}

	if attr, found := attrs["schedule"]; found {
		if s, valid := d.requiredStr(attr); valid {
			j.Schedule = s
			d.checkSchedule(attr, s, loc)
		}
	}

}

// jobCommand decodes what a job runs: its command, its directory (relative
// to the file's) and its environment.
func (d *decoder) jobCommand(j *Job, attrs hcl.Attributes) {
	if attr, found := attrs["command"]; found {
		if s, valid := d.requiredStr(attr); valid {
			switch {
			case strings.TrimSpace(s) == "":
				d.attrError(attr, "Empty command", "command must not be empty.")
			case strings.ContainsRune(s, 0):
				d.attrError(attr, "Invalid command", "command must not contain a NUL character.")
			case len(s) > maxArgLen:
				d.attrError(attr, "Invalid command",
					fmt.Sprintf("command is %d bytes, over the %d a process can be given.", len(s), maxArgLen))
			default:
				j.Command = s
			}
		}
	}

	j.Dir = d.dir // by default a cron job runs in the file's directory
	if attr, found := attrs["dir"]; found {
		if s, valid := d.str(attr); valid && s != "" {
			if strings.ContainsRune(s, 0) {
				d.attrError(attr, "Invalid directory", "dir must not contain a NUL character.")
			} else if filepath.IsAbs(s) {
				j.Dir = filepath.Clean(s)
			} else {
				j.Dir = filepath.Join(d.dir, s)
			}
		}
	}

	if attr, found := attrs["env"]; found {
		if env, valid := d.stringMap(attr); valid {
			j.Env = d.checkEnv(attr, env)
		}
	}

}

// jobPolicy decodes how a job's runs are fired and ordered: overlap and
// catch-up policies, jitter, priority and whether it is enabled.
func (d *decoder) jobPolicy(j *Job, attrs hcl.Attributes) {
	if attr, found := attrs["overlap"]; found {
		if s, valid := d.oneOf(attr, OverlapSkip, OverlapQueue, OverlapAllow); valid {
			j.Overlap = s
		}
	}
	if attr, found := attrs["catch_up"]; found {
		if s, valid := d.oneOf(attr, CatchUpNone, CatchUpLatest, CatchUpAll); valid {
			j.CatchUp = s
		}
	}
	if attr, found := attrs["max_catch_up"]; found {
		if n, valid := d.intIn(attr, 1, math.MaxInt, "at least 1"); valid {
			j.MaxCatchUp = n
		}
	}
	if attr, found := attrs["jitter"]; found {
		if v, valid := d.duration(attr); valid {
			if v < 0 {
				d.attrError(attr, "Invalid jitter", fmt.Sprintf("jitter must not be negative, got %s.", v))
			} else {
				j.Jitter = v
			}
		}
	}
	if attr, found := attrs["priority"]; found {
		rng := fmt.Sprintf("from %d to %d", -maxPriorityLimit, maxPriorityLimit)
		if n, valid := d.intIn(attr, -maxPriorityLimit, maxPriorityLimit, rng); valid {
			j.Priority = n
		}
	}
	if attr, found := attrs["unique"]; found {
		if v, valid := d.boolean(attr); valid {
			j.Unique = v
		}
	}
	if attr, found := attrs["catch_up"]; found && j.CatchUp == CatchUpAll {
		switch {
		case j.Overlap == OverlapSkip:
			d.attrWarning(attr, "Caught-up runs would be skipped",
				`With overlap = "skip" (the default), each caught-up run finds the one before it still pending and `+
					`is dropped, so catch_up = "all" fires one run, not one per missed time. Set overlap = "allow" to run `+
					`them all, or catch_up = "latest".`)
		case j.Unique:
			d.attrWarning(attr, "Caught-up runs would be skipped",
				`With unique = true, each caught-up run finds the one before it still pending and is skipped, `+
					`so catch_up = "all" fires one run, not one per missed time. Set unique = false to run them all, `+
					`or catch_up = "latest".`)
		}
	}
	if attr, found := attrs["enabled"]; found {
		if v, valid := d.boolean(attr); valid {
			j.Enabled = v
		}
	}
}

func undeclaredQueueDetail(name string, declared []string) string {
	if len(declared) == 0 {
		return fmt.Sprintf("No queue %q is declared, and the file declares no queues; only the implicit %q queue exists.", name, DefaultQueue)
	}
	quoted := make([]string, len(declared))
	implicit := fmt.Sprintf(" (and %q always exists)", DefaultQueue)
	for i, q := range declared {
		quoted[i] = fmt.Sprintf("%q", q)
		if q == DefaultQueue {
			implicit = ""
		}
	}
	return fmt.Sprintf("No queue %q is declared. Declared queues: %s%s.", name, strings.Join(quoted, ", "), implicit)
}

func (d *decoder) checkSchedule(attr *hcl.Attribute, spec string, loc *time.Location) {
	upper := strings.ToUpper(strings.TrimSpace(spec))
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if !strings.HasPrefix(upper, prefix) {
			continue
		}
		detail := "A schedule cannot carry its own time zone; remove the prefix and set the job's time_zone attribute"
		zone, _, _ := strings.Cut(strings.TrimSpace(spec)[len(prefix):], " ")
		if zone != "" {
			detail += fmt.Sprintf(" (time_zone = %q)", zone)
		}
		d.attrError(attr, "Invalid schedule", detail+".")
		return
	}
	_, err := cronspec.Parse(spec, loc)
	switch {
	case errors.Is(err, cronspec.ErrNeverFires):
		d.attrError(attr, "Schedule never fires",
			fmt.Sprintf("No date matches %q (for example, February has no 30th), so the job would never run.", spec))
	case err != nil:
		d.attrError(attr, "Invalid schedule",
			fmt.Sprintf("Cannot parse %q: %v. Use 5 fields (minute hour day-of-month month day-of-week), 6 with leading seconds, or a descriptor such as @daily or \"@every 90s\".", spec, err))
	}
}

// checkEnv validates environment variable names and values.
func (d *decoder) checkEnv(attr *hcl.Attribute, env map[string]string) map[string]string {
	valid := true
	for _, k := range sortedKeys(env) {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			d.attrError(attr, "Invalid environment variable name",
				fmt.Sprintf("%q cannot be an environment variable name: it must be non-empty and contain no \"=\" or NUL.", k))
			valid = false
		case strings.HasPrefix(k, reservedEnvPrefix):
			d.attrError(attr, "Reserved environment variable",
				fmt.Sprintf("%s cannot be set by a job: names starting with %s are queuectl's own (it finds a job's processes by them).", k, reservedEnvPrefix))
			valid = false
		case strings.ContainsRune(env[k], 0):
			d.attrError(attr, "Invalid environment variable value",
				fmt.Sprintf("The value of %s contains a NUL character.", k))
			valid = false
		case len(k)+1+len(env[k]) > maxArgLen:
			d.attrError(attr, "Invalid environment variable value",
				fmt.Sprintf("%s=… is %d bytes, over the %d a process can be given.", k, len(k)+1+len(env[k]), maxArgLen))
			valid = false
		}
	}
	if n := envSize(env); valid && n > maxEnvSize {
		d.attrError(attr, "Invalid environment",
			fmt.Sprintf("The variables are %d bytes in all, over the %d a job may carry (a process is given at most 2 MiB of arguments and environment, the worker's own included).", n, maxEnvSize))
		valid = false
	}
	if !valid {
		return nil
	}
	return env
}

// envSize is the size env takes in a process's environment, as
// queue.EnvSize counts it.
func envSize(env map[string]string) int {
	n := 0
	for k, v := range env {
		n += len(k) + len(v) + 2
	}
	return n
}

// loadLocation loads an IANA time zone, refusing the machine-dependent
// "Local" and the empty name (which time.LoadLocation maps to UTC).
func loadLocation(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("time zone %q is not allowed", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	return loc, nil
}
