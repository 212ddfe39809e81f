//go:build unix && !linux && !darwin

package pipe

import "errors"

// fdPeerUID has no implementation here: every peer is refused (fail closed).
func fdPeerUID(int) (int, error) {
	return -1, errors.New("peer credentials are not supported on this system")
}
