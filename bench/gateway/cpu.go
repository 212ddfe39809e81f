//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's times (USER_HZ: 100 on Linux).
const clockTick = 10 * time.Millisecond

// treeCPU is the user+system time of pid and every process below it.
func treeCPU(pid int) time.Duration {
	type proc struct {
		ppid int
		cpu  time.Duration
	}
	procs := map[int]proc{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid … utime(14) stime(15): comm may hold spaces
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 13 {
			continue
		}
		id, _ := strconv.Atoi(strings.TrimSpace(s[:strings.IndexByte(s, ' ')]))
		ppid, _ := strconv.Atoi(fields[1])
		ut, _ := strconv.ParseInt(fields[11], 10, 64)
		st, _ := strconv.ParseInt(fields[12], 10, 64)
		procs[id] = proc{ppid: ppid, cpu: time.Duration(ut+st) * clockTick}
	}
	var total time.Duration
	var walk func(int)
	walk = func(p int) {
		total += procs[p].cpu
		for id, pr := range procs {
			if pr.ppid == p {
				walk(id)
			}
		}
	}
	walk(pid)
	return total
}
