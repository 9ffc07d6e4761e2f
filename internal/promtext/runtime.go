package promtext

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: clock ticks of
// 1/100 s on every Linux architecture Go supports.
const userHZ = 100

// goMetrics maps runtime/metrics samples to the names client libraries
// give them.
var goMetrics = []struct {
	key, name, help string
	typ             Type
}{
	{"/sched/goroutines:goroutines", "go_goroutines", "Number of goroutines that currently exist.", Gauge},
	{"/memory/classes/heap/objects:bytes", "go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", Gauge},
	{"/gc/heap/allocs:bytes", "go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now.", Counter},
	{"/memory/classes/total:bytes", "go_memstats_sys_bytes", "Number of bytes obtained from the system.", Gauge},
	{"/gc/heap/objects:objects", "go_memstats_heap_objects", "Number of currently allocated objects.", Gauge},
	{"/gc/cycles/total:gc-cycles", "go_gc_cycles_total", "Number of completed garbage collection cycles.", Counter},
	{"/gc/gogc:percent", "go_gc_gogc_percent", "Heap size target percentage (GOGC).", Gauge},
	{"/gc/gomemlimit:bytes", "go_gc_gomemlimit_bytes", "Go runtime memory limit (GOMEMLIMIT).", Gauge},
	{"/sched/gomaxprocs:threads", "go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting.", Gauge},
}

// GoRuntime returns the Go runtime's figures for this process.
func GoRuntime() []*Family {
	samples := make([]metrics.Sample, len(goMetrics))
	for i, m := range goMetrics {
		samples[i].Name = m.key
	}
	metrics.Read(samples)
	var out []*Family
	for i, m := range goMetrics {
		var v float64
		switch samples[i].Value.Kind() {
		case metrics.KindUint64:
			v = float64(samples[i].Value.Uint64())
		case metrics.KindFloat64:
			v = samples[i].Value.Float64()
		default:
			continue // not known to this Go release
		}
		f := NewFamily(m.name, m.help, m.typ)
		f.Add(v)
		out = append(out, f)
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	f := NewFamily("go_threads", "Number of OS threads created.", Gauge)
	f.Add(float64(threads))
	info := NewFamily("go_info", "Information about the Go environment.", Gauge, "version")
	info.Add(1, runtime.Version())
	return append(out, f, info)
}

// Process returns this process's CPU time, memory, open files and start
// time, read from /proc; none where /proc is not mounted.
func Process() []*Family {
	out := process("/proc/self")
	var lim syscall.Rlimit
	if len(out) > 0 && syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		f := NewFamily("process_max_fds", "Maximum number of open file descriptors.", Gauge)
		f.Add(float64(lim.Cur))
		out = append(out, f)
	}
	return out
}

// process reads the figures of the process whose /proc directory is dir.
func process(dir string) []*Family {
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return nil
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start past the last ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	field := func(n int) float64 { // n counts from 1 as in proc(5)
		if n-3 >= len(fields) {
			return 0
		}
		v, _ := strconv.ParseFloat(fields[n-3], 64)
		return v
	}
	var out []*Family
	add := func(name, help string, typ Type, v float64) {
		f := NewFamily(name, help, typ)
		f.Add(v)
		out = append(out, f)
	}
	add("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", Counter,
		(field(14)+field(15))/userHZ)
	add("process_virtual_memory_bytes", "Virtual memory size in bytes.", Gauge, field(23))
	add("process_resident_memory_bytes", "Resident memory size in bytes.", Gauge, field(24)*float64(os.Getpagesize()))
	if boot, ok := bootTime(); ok {
		add("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", Gauge,
			boot+field(22)/userHZ)
	}
	if fds, err := os.ReadDir(dir + "/fd"); err == nil {
		add("process_open_fds", "Number of open file descriptors.", Gauge, float64(len(fds)))
	}
	return out
}

// bootTime is when the system booted, in seconds since the epoch, as the
// wall clock now sees it: now less the uptime. (The btime of /proc/stat is
// whole seconds and drifts from the wall clock as it is adjusted.)
func bootTime() (float64, bool) {
	now := time.Now()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, false
	}
	up, _, _ := strings.Cut(string(b), " ")
	v, err := strconv.ParseFloat(up, 64)
	if err != nil {
		return 0, false
	}
	return float64(now.UnixNano())/1e9 - v, true
}
