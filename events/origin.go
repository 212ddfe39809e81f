package events

// The attributes of an event's origin, set by the hub that publishes it to
// a cluster stream (ADR 0012): who published it, from which machine and
// data dir. A collector stores an event only when its origin matches the
// subject it arrived on, which the cluster's permissions pin to the
// publisher's credentials.
const (
	AttrOriginUser    = "origin.user"
	AttrOriginMachine = "origin.machine"
	AttrOriginData    = "origin.data"
)
