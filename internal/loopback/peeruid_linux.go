package loopback

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// PeerUID is the uid owning the other end of c, a TCP connection between
// two sockets of this machine: the socket whose local address is c's
// remote one and whose remote address is c's local one, as the kernel
// lists it in /proc/net/tcp (IPv4) or /proc/net/tcp6.
func PeerUID(c net.Conn) (int, error) {
	la, lok := c.LocalAddr().(*net.TCPAddr)
	ra, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return -1, fmt.Errorf("not a TCP connection: %T", c.RemoteAddr())
	}
	table, want, peer := "/proc/net/tcp", procAddr(ra), procAddr(la)
	if ra.IP.To4() == nil {
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
	return -1, fmt.Errorf("no socket %s → %s in %s (the peer is not on this machine, or already gone)", ra, la, table)
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
