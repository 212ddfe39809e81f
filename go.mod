module github.com/tracebridge/tracebridge

go 1.26.0

require (
	github.com/oklog/ulid/v2 v2.1.2
	go.etcd.io/bbolt v1.5.0
)

require golang.org/x/sys v0.49.0 // indirect
