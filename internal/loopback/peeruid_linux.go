package loopback

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// PeerUID is the uid owning the other end of c, a TCP connection between
// two sockets of this machine: the socket whose local address is c's
// remote one and whose remote address is c's local one. It asks the
// kernel for that one socket (sock_diag over netlink, an exact lookup by
// its addresses and ports); where that is not available it reads
// /proc/net/tcp{,6}, whose cost grows with the sockets the machine holds.
func PeerUID(c net.Conn) (int, error) {
	la, lok := c.LocalAddr().(*net.TCPAddr)
	ra, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return -1, fmt.Errorf("not a TCP connection: %T", c.RemoteAddr())
	}
	uid, err := diagUID(ra, la)
	if err == nil {
		return uid, nil
	}
	if errors.Is(err, errNoSocket) {
		return -1, fmt.Errorf("no socket %s → %s on this machine (the peer is not local, or already gone)", ra, la)
	}
	return procUID(ra, la)
}

var errNoSocket = errors.New("no such socket")

// diagUID asks sock_diag for the TCP socket local → remote and returns its
// owner. The request is struct inet_diag_req_v2 (linux/inet_diag.h): family,
// protocol, extensions, pad, states, then struct inet_diag_sockid (source
// and destination ports and addresses in network order, interface, and the
// cookie INET_DIAG_NOCOOKIE for a lookup by addresses alone).
func diagUID(local, remote *net.TCPAddr) (int, error) {
	family, lip, rip := unix.AF_INET, local.IP.To4(), remote.IP.To4()
	if lip == nil || rip == nil {
		family, lip, rip = unix.AF_INET6, local.IP.To16(), remote.IP.To16()
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	const hdrLen, reqLen = 16, 56
	msg := make([]byte, hdrLen+reqLen)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(msg[8:], 1) // seq
	req := msg[hdrLen:]
	req[0], req[1] = byte(family), unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(req[4:], 0xffffffff) // every state
	id := req[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(local.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(remote.Port))
	copy(id[4:20], lip)
	copy(id[20:36], rip)
	binary.NativeEndian.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return -1, err
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return -1, err
	}
	if n < hdrLen {
		return -1, errors.New("sock_diag: a short answer")
	}
	switch binary.NativeEndian.Uint16(buf[4:]) {
	case unix.NLMSG_ERROR:
		if n >= hdrLen+4 {
			if e := -int32(binary.NativeEndian.Uint32(buf[hdrLen:])); e == int32(unix.ENOENT) {
				return -1, errNoSocket
			} else if e != 0 {
				return -1, fmt.Errorf("sock_diag: %w", unix.Errno(e))
			}
		}
		return -1, errors.New("sock_diag: an error without a code")
	case unix.SOCK_DIAG_BY_FAMILY:
		// struct inet_diag_msg: family, state, timer, retrans (4 bytes),
		// the sockid (48), expires, rqueue, wqueue (12), then uid.
		const uidAt = hdrLen + 4 + 48 + 12
		if n < uidAt+4 {
			return -1, errors.New("sock_diag: a short answer")
		}
		return int(binary.NativeEndian.Uint32(buf[uidAt:])), nil
	}
	return -1, errors.New("sock_diag: an unexpected answer")
}

// procUID finds the socket local → remote in /proc/net/tcp{,6}.
func procUID(local, remote *net.TCPAddr) (int, error) {
	table, want, peer := "/proc/net/tcp", procAddr(local), procAddr(remote)
	if local.IP.To4() == nil {
		table = "/proc/net/tcp6"
	}
	f, err := os.Open(table)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[1] != want || fields[2] != peer {
			continue
		}
		return strconv.Atoi(fields[7])
	}
	if err := sc.Err(); err != nil {
		return -1, err
	}
	return -1, fmt.Errorf("no socket %s → %s in %s (the peer is not on this machine, or already gone)", local, remote, table)
}

// procAddr spells a as /proc/net/tcp{,6} does: the address as 32-bit words
// in host (little-endian) order, in hex, then the port.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		ip = a.IP.To16()
	}
	var sb strings.Builder
	for i := 0; i < len(ip); i += 4 {
		var w [4]byte
		binary.LittleEndian.PutUint32(w[:], binary.BigEndian.Uint32(ip[i:i+4]))
		sb.WriteString(strings.ToUpper(hex.EncodeToString(w[:])))
	}
	return fmt.Sprintf("%s:%04X", sb.String(), a.Port)
}
