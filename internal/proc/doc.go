// Package proc answers questions about other processes of this machine.
package proc
