//go:build !unix

package host

import "testing"

func mkfifo(t *testing.T, _ string) { t.Skip("no FIFOs on this system") }
