//go:build !tb_testtools

package main

import "github.com/tracebridge/tracebridge/bridge/executor"

// testTools is empty in every real build; see testtools_on.go.
func testTools() []*executor.Tool { return nil }

// archiveFailpoint is a no-op outside -tags tb_testtools builds.
func archiveFailpoint(string) {}
