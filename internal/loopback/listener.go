package loopback

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
)

// Refused tells a listener's owner about a connection it closed: whose it
// was and why.
type Refused func(addr string, uid int, err error)

// SameUser returns l, letting in only connections whose other end is a
// process of this user (os.Geteuid); the others are closed at once, before
// anything is read from them, and reported to refused. Where the peer's
// uid cannot be known (not Linux), every connection is let in and
// unsupported is called once.
func SameUser(l net.Listener, refused Refused, unsupported func()) net.Listener {
	return &sameUser{Listener: l, me: os.Geteuid(), refused: refused, unsupported: unsupported}
}

type sameUser struct {
	net.Listener
	me          int
	refused     Refused
	unsupported func()
	once        sync.Once
}

func (l *sameUser) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := PeerUID(c)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			if l.unsupported != nil {
				l.once.Do(l.unsupported)
			}
			return c, nil
		case err == nil && uid == l.me:
			return c, nil
		case err == nil:
			err = fmt.Errorf("the connecting process runs as uid %d, not this user's uid %d", uid, l.me)
		}
		c.Close()
		if l.refused != nil {
			l.refused(c.RemoteAddr().String(), uid, err)
		}
	}
}

// Marked returns l, letting every connection in but marking those whose
// other end is not a process of this user (or whose user cannot be known)
// as *OtherUser: a listener that also takes credentials meant for other
// people (access tokens of an issuer, behind a reverse proxy run as
// another user) keeps this user's own secret (the data dir's token) for
// this user's processes.
func Marked(l net.Listener) net.Listener { return &marked{Listener: l, me: os.Geteuid()} }

type marked struct {
	net.Listener
	me int
}

// OtherUser is a connection from a process of another user (UID -1:
// unknown).
type OtherUser struct {
	net.Conn
	UID int
}

func (l *marked) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	uid, err := PeerUID(c)
	switch {
	case err == nil && uid == l.me:
		return c, nil
	case err != nil:
		uid = -1
	}
	return &OtherUser{Conn: c, UID: uid}, nil
}
