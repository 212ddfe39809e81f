//go:build !linux

package loopback

import (
	"errors"
	"net"
)

// PeerUID is not available on this system: every peer is let in (the
// token still applies).
func PeerUID(net.Conn) (int, error) {
	return -1, errors.ErrUnsupported
}
