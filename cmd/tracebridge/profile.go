package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile of the whole process to the file
// TRACEBRIDGE_CPUPROFILE names and, at exit, its allocations to the file
// TRACEBRIDGE_MEMPROFILE names (how the gateway's cost per call is taken
// apart: docs/ARCHITECTURE.md, "Performance"). The returned function ends
// them; it does nothing when neither was asked for.
func startProfile() func() {
	cpu, mem := os.Getenv("TRACEBRIDGE_CPUPROFILE"), os.Getenv("TRACEBRIDGE_MEMPROFILE")
	var f *os.File
	if cpu != "" {
		var err error
		if f, err = os.Create(cpu); err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tracebridge: TRACEBRIDGE_CPUPROFILE: %v\n", err)
			f = nil
		}
	}
	return func() {
		if f != nil {
			pprof.StopCPUProfile()
			f.Close()
		}
		if mem != "" {
			if err := writeAllocs(mem); err != nil {
				fmt.Fprintf(os.Stderr, "tracebridge: TRACEBRIDGE_MEMPROFILE: %v\n", err)
			}
		}
	}
}

func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}
