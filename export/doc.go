// Package export writes the log for readers outside tracebridge, each in
// the format that reader expects: artifact triads (the run's log,
// metadata.json and its .mmd sequence diagram) for CI and review, the
// review markdown, JUnit XML reports for CI test views, and audit JSON lines
// for a SIEM, each after a signed checkpoint that covers it. Package
// export/otlp sends runs as OpenTelemetry traces, logs and metrics.
//
// Export formats read the log and the judge (replay); they never write to
// the log.
package export
