// Package proc answers questions about other processes of this machine
// and ends the children this one starts, with what they started.
package proc
