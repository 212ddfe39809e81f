//go:build unix

package pipe

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRoundTrip is one small command through the client, the socket and
// the server (events emitted on both sides, as in production), with 1 and 32
// callers sharing the connection; beside it, a bare Unix-socket echo of one
// line, no JSON, no events, in the same run.
func BenchmarkRoundTrip(b *testing.B) {
	for _, callers := range []int{1, 32} {
		b.Run(fmt.Sprintf("pipe/callers=%d", callers), func(b *testing.B) {
			r := newRig(b, nil)
			defer r.shutdown()
			c := r.client(5 * time.Second)
			defer c.Close()
			runCallers(b, callers, func() error {
				_, err := c.Call(context.Background(), request("echo", `{"path":"src/main.go"}`))
				return err
			})
		})
		b.Run(fmt.Sprintf("bare-socket/callers=%d", callers), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "echo.sock")
			l, err := net.Listen("unix", path)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					go func() {
						rd := bufio.NewReader(c)
						for {
							line, err := rd.ReadBytes('\n')
							if err != nil {
								return
							}
							c.Write(line)
						}
					}()
				}
			}()
			// One connection per caller: a bare socket cannot multiplex.
			conns := make(chan net.Conn, callers)
			for i := 0; i < callers; i++ {
				c, err := net.Dial("unix", path)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				conns <- c
			}
			runCallers(b, callers, func() error {
				c := <-conns
				defer func() { conns <- c }()
				if _, err := c.Write([]byte(`{"path":"src/main.go"}` + "\n")); err != nil {
					return err
				}
				buf := make([]byte, 64)
				_, err := c.Read(buf)
				return err
			})
		})
	}
}

func runCallers(b *testing.B, callers int, call func() error) {
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < callers; w++ {
		wg.Go(func() {
			var mine []time.Duration
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := call(); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
		b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)])/1e3, "p99-µs")
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	}
	b.ReportMetric(0, "ns/op")
}
