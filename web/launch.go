package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"time"
)

// LaunchTTL is how long a launch token may be exchanged, once.
const LaunchTTL = 5 * time.Minute

// A launch token is nonce (12 bytes) ‖ expiry (unix seconds, 8 bytes) ‖
// HMAC-SHA256(key, nonce ‖ expiry)[:16], in hex. Anyone holding the key
// (the UI, and `tracebridge ui` through the user's own 0600 run/ui.json)
// mints one without asking the UI; the UI takes each nonce once and none
// past its expiry, so a URL seen in a browser's argv or a terminal's
// scrollback is not a standing credential.
const (
	nonceLen  = 12
	expiryLen = 8
	macLen    = 16
	tokenLen  = 2 * (nonceLen + expiryLen + macLen)
)

// MintLaunchToken returns a fresh launch token for key, valid until
// now+LaunchTTL.
func MintLaunchToken(key []byte, now time.Time) string {
	b := make([]byte, nonceLen+expiryLen, nonceLen+expiryLen+macLen)
	copy(b, randomBytes(nonceLen))
	binary.BigEndian.PutUint64(b[nonceLen:], uint64(now.Add(LaunchTTL).Unix()))
	return hex.EncodeToString(append(b, launchMAC(key, b)...))
}

// LaunchURL is origin's address with a fresh launch token.
func LaunchURL(origin string, key []byte, now time.Time) string {
	return origin + "/?token=" + MintLaunchToken(key, now)
}

func launchMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)[:macLen]
}

var (
	errLaunchForged  = errors.New("this launch token was not minted by the running UI")
	errLaunchExpired = errors.New("this launch link has expired")
	errLaunchUsed    = errors.New("this launch link was already used")
	errLaunchNotGET  = errors.New("a launch link is opened with GET")
)

// takeLaunch checks token and spends it: at most once, before its expiry.
func (s *Server) takeLaunch(token string, now time.Time) error {
	b, err := hex.DecodeString(token)
	if err != nil || len(token) != tokenLen || !hmac.Equal(b[nonceLen+expiryLen:], launchMAC(s.launchKey, b[:nonceLen+expiryLen])) {
		return errLaunchForged
	}
	expiry := time.Unix(int64(binary.BigEndian.Uint64(b[nonceLen:])), 0)
	if !now.Before(expiry) {
		return errLaunchExpired
	}
	nonce := string(b[:nonceLen])
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, exp := range s.spent { // forget what can no longer be used anyway
		if !now.Before(exp) {
			delete(s.spent, n)
		}
	}
	if _, used := s.spent[nonce]; used {
		return errLaunchUsed
	}
	s.spent[nonce] = expiry
	return nil
}
