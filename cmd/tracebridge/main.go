// Command tracebridge is an MCP tool bridge that leaves evidence: every
// boundary crossing is an event in a tamper-evident log.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	endProfile := startProfile()
	code := NewMain().Run(ctx, os.Args[1:])
	stop()
	endProfile()
	os.Exit(code)
}
