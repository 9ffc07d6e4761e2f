package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BootID returns an identifier of the process table this process sees: the
// current boot (/proc/sys/kernel/random/boot_id) and, when it is not the
// host's first one, the pid namespace, as "BOOT" or "BOOT/pid:[INODE]";
// "" if unknown. Containers share the host's boot id but not its pids, so
// a pid recorded in one namespace says nothing about another.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	if ns != initPIDNamespace {
		id += "/" + ns
	}
	return id
}

// initPIDNamespace is the link of the host's initial pid namespace, whose
// inode number the kernel fixes (PROC_PID_INIT_INO).
const initPIDNamespace = "pid:[4026531836]"

// StartTime returns an opaque token for when process pid started: field 22
// (starttime, in clock ticks since boot) of /proc/PID/stat. The error wraps
// os.ErrNotExist if there is no such process.
func StartTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, fmt.Errorf("start time: %w", err)
	}
	return st.start, nil
}

// Alive reports whether process pid exists and, when startTime != 0, started
// at startTime (so a reused pid is not mistaken for the original). Zombies
// count as not alive.
func Alive(pid int, startTime uint64) bool {
	st, err := readStat(pid)
	if err != nil {
		return false
	}
	if st.state == 'Z' || st.state == 'X' {
		return false
	}
	return startTime == 0 || st.start == startTime
}

// GroupMembers returns the pids of the live (non-zombie) processes whose
// process group is pgid, by scanning /proc. Its cost is proportional to the
// number of processes on the host. Processes that appear or exit during the
// scan may or may not be included.
func GroupMembers(pgid int) ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	var members []int
	for {
		names, err := d.Readdirnames(512)
		for _, name := range names {
			pid, convErr := strconv.Atoi(name)
			if convErr != nil || pid <= 0 {
				continue
			}
			st, statErr := readStat(pid)
			if statErr != nil {
				continue // exited meanwhile, or unreadable
			}
			if st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
				members = append(members, pid)
			}
		}
		if err == io.EOF {
			return members, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list processes: %w", err)
		}
	}
}

// stat holds the fields of /proc/PID/stat this package uses.
type stat struct {
	comm  string
	state byte
	ppid  int
	pgrp  int
	start uint64
	// utime, stime, cutime, cstime (fields 14 to 17), vsize (23) and rss
	// (24, in pages).
	utime, stime, cutime, cstime, vsize, rss uint64
}

// userHZ is the unit of the times in /proc/PID/stat: clock ticks of 1/100 s
// on every Linux architecture Go supports.
const userHZ = 100

func ticks(n uint64) time.Duration { return time.Duration(n) * (time.Second / userHZ) }

// ReadUsage reads what process pid has used so far from /proc/PID/stat.
// The error wraps os.ErrNotExist if there is no such process.
func ReadUsage(pid int) (Usage, error) {
	st, err := readStat(pid)
	if err != nil {
		return Usage{}, fmt.Errorf("read usage: %w", err)
	}
	return Usage{
		User: ticks(st.utime), System: ticks(st.stime),
		ChildUser: ticks(st.cutime), ChildSystem: ticks(st.cstime),
		Started:      ticks(st.start),
		VirtualBytes: st.vsize, ResidentBytes: st.rss * uint64(os.Getpagesize()),
	}, nil
}

// readStat reads /proc/PID/stat. Errors for a process that does not exist (or
// vanished while being read) wrap os.ErrNotExist.
func readStat(pid int) (stat, error) {
	if pid <= 0 {
		return stat{}, fmt.Errorf("pid %d: %w", pid, os.ErrNotExist)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return stat{}, fmt.Errorf("pid %d: %w", pid, os.ErrNotExist)
		}
		return stat{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	st, err := parseStat(b)
	if err != nil {
		return stat{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	return st, nil
}

// parseStat parses the contents of /proc/PID/stat. The second field (comm) is
// wrapped in parentheses and may itself contain spaces and parentheses, so
// the fixed-format fields are taken from after the last ')'.
func parseStat(b []byte) (stat, error) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return stat{}, errors.New("malformed stat: no comm field")
	}
	// Fields 3.. (state is field 3, starttime field 22, rss field 24).
	f := strings.Fields(string(b[closing+1:]))
	if len(f) < 22 || len(f[0]) != 1 {
		return stat{}, errors.New("malformed stat: too few fields")
	}
	st := stat{comm: string(b[open+1 : closing]), state: f[0][0]}
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return stat{}, fmt.Errorf("malformed stat: ppid: %w", err)
	}
	if st.pgrp, err = strconv.Atoi(f[2]); err != nil {
		return stat{}, fmt.Errorf("malformed stat: pgrp: %w", err)
	}
	if st.start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return stat{}, fmt.Errorf("malformed stat: starttime: %w", err)
	}
	for _, v := range []struct {
		field int // as numbered in proc(5)
		to    *uint64
	}{{14, &st.utime}, {15, &st.stime}, {16, &st.cutime}, {17, &st.cstime}, {23, &st.vsize}, {24, &st.rss}} {
		if *v.to, err = strconv.ParseUint(f[v.field-3], 10, 64); err != nil {
			return stat{}, fmt.Errorf("malformed stat: field %d: %w", v.field, err)
		}
	}
	return st, nil
}

// KillByEnv kills (SIGKILL) every process, other than this one, whose
// environment holds all the given "KEY=VALUE" entries, and the process group
// of each such process that leads its group. An entry "KEY?=VALUE" holds
// when the environment has KEY=VALUE or no KEY at all (a variable that
// processes started by an older worker do not carry). It finds the
// leftovers of a lost job attempt by the variables its worker gave it,
// including processes that left the job's process group. It returns how
// many processes matched. Processes whose environment cannot be read
// (another user's) are skipped.
func KillByEnv(entries ...string) (int, error) {
	if len(entries) == 0 {
		return 0, errors.New("kill by environment: no entries")
	}
	d, err := os.Open("/proc")
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var matched []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil || !hasAll(env, entries) {
			continue
		}
		matched = append(matched, pid)
	}
	for _, pid := range matched {
		// A matching group leader's group goes too: its members may have
		// dropped the variables but not left the group.
		if st, err := readStat(pid); err == nil && st.pgrp == pid && checkGroup(pid) == nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(matched), nil
}

// hasAll reports whether the NUL-separated environment block env holds
// every entry: exactly, or for "KEY?=VALUE" as KEY=VALUE or without KEY.
func hasAll(env []byte, entries []string) bool {
	vars := bytes.Split(env, []byte{0})
	for _, e := range entries {
		// The marker is the first "=" (values may hold "?=" themselves).
		key, value, _ := strings.Cut(e, "=")
		key, optional := strings.CutSuffix(key, "?")
		if optional {
			e = key + "=" + value
		}
		found, keyFound := false, false
		for _, kv := range vars {
			if string(kv) == e {
				found = true
				break
			}
			keyFound = keyFound || optional && bytes.HasPrefix(kv, []byte(key+"="))
		}
		if !found && (!optional || keyFound) {
			return false
		}
	}
	return true
}
