package promtext

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"

	"github.com/queuectl/queuectl/internal/proc"
	"time"
)

// GoRuntime returns the Go runtime's figures for this process, under the
// names and types of the Go client library's default collector.
func GoRuntime() []*Family {
	var out []*Family
	add := func(name, help string, typ Type, v float64) { out = append(out, single(name, help, typ, v)) }
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms) // stops the world for microseconds, once a scrape
	for _, m := range []struct {
		name, help string
		typ        Type
		v          uint64
	}{
		{"go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", Gauge, ms.Alloc},
		{"go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", Counter, ms.TotalAlloc},
		{"go_memstats_sys_bytes", "Number of bytes obtained from system.", Gauge, ms.Sys},
		{"go_memstats_mallocs_total", "Total number of heap objects allocated, both live and gc-ed.", Counter, ms.Mallocs},
		{"go_memstats_frees_total", "Total number of heap objects frees.", Counter, ms.Frees},
		{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", Gauge, ms.HeapAlloc},
		{"go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system.", Gauge, ms.HeapSys},
		{"go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", Gauge, ms.HeapIdle},
		{"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", Gauge, ms.HeapInuse},
		{"go_memstats_heap_released_bytes", "Number of heap bytes released to OS.", Gauge, ms.HeapReleased},
		{"go_memstats_heap_objects", "Number of currently allocated objects.", Gauge, ms.HeapObjects},
		{"go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", Gauge, ms.StackInuse},
		{"go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", Gauge, ms.StackSys},
		{"go_memstats_mspan_inuse_bytes", "Number of bytes in use by mspan structures.", Gauge, ms.MSpanInuse},
		{"go_memstats_mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system.", Gauge, ms.MSpanSys},
		{"go_memstats_mcache_inuse_bytes", "Number of bytes in use by mcache structures.", Gauge, ms.MCacheInuse},
		{"go_memstats_mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system.", Gauge, ms.MCacheSys},
		{"go_memstats_buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table.", Gauge, ms.BuckHashSys},
		{"go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata.", Gauge, ms.GCSys},
		{"go_memstats_other_sys_bytes", "Number of bytes used for other system allocations.", Gauge, ms.OtherSys},
		{"go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", Gauge, ms.NextGC},
	} {
		add(m.name, m.help, m.typ, float64(m.v))
	}
	add("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", Gauge,
		float64(ms.LastGC)/1e9)

	// GC pauses as the client library gives them: a summary of the
	// recent pauses' quantiles, with every pause's count and sum.
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	quantiles := []float64{0, 0.25, 0.5, 0.75, 1}
	pauses := make([]float64, len(quantiles))
	for i, d := range gc.PauseQuantiles {
		pauses[i] = d.Seconds()
	}
	f := NewFamily("go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", Summary)
	f.AddSummary(quantiles, pauses, uint64(gc.NumGC), gc.PauseTotal.Seconds())
	out = append(out, f)

	samples := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}, {Name: "/sched/gomaxprocs:threads"}}
	metrics.Read(samples)
	for i, m := range []struct{ name, help string }{
		{"go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100."},
		{"go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64."},
		{"go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting."},
	} {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			add(m.name, m.help, Gauge, float64(samples[i].Value.Uint64()))
		}
	}
	add("go_goroutines", "Number of goroutines that currently exist.", Gauge, float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	add("go_threads", "Number of OS threads created.", Gauge, float64(threads))
	info := NewFamily("go_info", "Information about the Go environment.", Gauge, "version")
	info.Add(1, runtime.Version())
	return append(out, info)
}

// single is a family of one unlabelled sample.
func single(name, help string, typ Type, v float64) *Family {
	f := NewFamily(name, help, typ)
	f.Add(v)
	return f
}

// ProcessReader reads a process's figures from /proc (Linux only: where
// /proc is not mounted it has none).
type ProcessReader struct {
	boot float64 // seconds since the epoch; 0 when unknown
}

// NewProcessReader fixes the system's boot time as the wall clock sees it
// now, so every reading of one process gives the same start time.
func NewProcessReader() *ProcessReader {
	boot, _ := bootTime()
	return &ProcessReader{boot: boot}
}

// Self returns this process's CPU time, memory, open files and start time.
func (p *ProcessReader) Self() []*Family {
	out := p.read(os.Getpid())
	var lim syscall.Rlimit
	if len(out) > 0 && syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		out = append(out, single("process_max_fds", "Maximum number of open file descriptors.", Gauge, float64(lim.Cur)))
	}
	return out
}

// read reads the figures of process pid.
func (p *ProcessReader) read(pid int) []*Family {
	u, err := proc.ReadUsage(pid)
	if err != nil {
		return nil
	}
	out := []*Family{
		single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", Counter, (u.User + u.System).Seconds()),
		single("process_virtual_memory_bytes", "Virtual memory size in bytes.", Gauge, float64(u.VirtualBytes)),
		single("process_resident_memory_bytes", "Resident memory size in bytes.", Gauge, float64(u.ResidentBytes)),
	}
	if p.boot > 0 {
		out = append(out, single("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", Gauge,
			p.boot+u.Started.Seconds()))
	}
	if fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd"); err == nil {
		out = append(out, single("process_open_fds", "Number of open file descriptors.", Gauge, float64(len(fds))))
	}
	return out
}

// bootTime is when the system booted, in seconds since the epoch, as the
// wall clock now sees it: now less the uptime, to 10 ms. (The btime of
// /proc/stat is whole seconds, and drifts from the wall clock as NTP
// adjusts it.)
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
