package boltdb

// Keys are strings encoded so that bytewise order is the strings' order
// and a part ends where its terminator is: a 0x00 byte is written 0x00
// 0xFF, and every part ends 0x00 0x01, which sorts below any byte that can
// follow a shorter string's last byte. A prefix's escaped bytes (no
// terminator) begin exactly the keys whose part begins with it.

func appendEscaped(b []byte, s string) []byte {
	for i := range len(s) {
		if s[i] == 0 {
			b = append(b, 0, 0xFF)
		} else {
			b = append(b, s[i])
		}
	}
	return b
}

func appendKeyPart(b []byte, s string) []byte {
	return append(appendEscaped(b, s), 0, 1)
}

// prefixEnd is the least key above every key that begins with p; nil when
// there is none (p is all 0xFF).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
