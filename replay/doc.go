// Package replay reconstructs one request from the log and judges it: the
// verdict names the first boundary that failed, its code, what it means and
// what the operator can do, or says the run is incomplete and where it
// stopped (a crash mid-request).
package replay
