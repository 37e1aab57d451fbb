package intrinsic

import (
	"crypto/md5"  //nolint:gosec // States.Hash offers MD5 because AWS does; it is not used for security here.
	"crypto/sha1" //nolint:gosec // States.Hash offers SHA-1 because AWS does; it is not used for security here.
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"strings"
)

// maxEncodeChars is AWS's limit on the input of States.Base64Encode,
// States.Base64Decode and States.Hash, in characters.
const maxEncodeChars = 10000

// limitedStringArg reads a string argument of at most maxEncodeChars.
func limitedStringArg(name string, args []any, i int) (string, error) {
	s, err := stringArg(name, args, i)
	if err != nil {
		return "", err
	}
	if n := utf16Len(s); n > maxEncodeChars {
		return "", fail(name, "argument %d has %d characters, more than the limit of %d", i+1, n, maxEncodeChars)
	}
	return s, nil
}

// base64Encode implements States.Base64Encode(string): the UTF-8 bytes in
// standard (MIME alphabet, padded) base64.
func base64Encode(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.Base64Encode"
	if err := wantArgs(name, args, 1); err != nil {
		return nil, err
	}
	s, err := limitedStringArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
}

// base64Decode implements States.Base64Decode(string). Line breaks are
// ignored, as MIME decoders do; bytes that are not UTF-8 become U+FFFD, as
// Java's String constructor does.
func base64Decode(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.Base64Decode"
	if err := wantArgs(name, args, 1); err != nil {
		return nil, err
	}
	s, err := limitedStringArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fail(name, "argument 1 is not valid base64")
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// statesHash implements States.Hash(string, algorithm): the lower-case hex digest
// of the UTF-8 bytes.
func statesHash(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.Hash"
	if err := wantArgs(name, args, 2); err != nil {
		return nil, err
	}
	data, err := limitedStringArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	alg, err := stringArg(name, args, 1)
	if err != nil {
		return nil, err
	}
	digest, ok := Digest(data, alg)
	if !ok {
		return nil, fail(name, "argument 2 must name an algorithm: MD5, SHA-1, SHA-256, SHA-384 or SHA-512")
	}
	return digest, nil
}

// Digest returns the lower-case hex digest of data's UTF-8 bytes with one
// of the algorithms Step Functions offers (MD5, SHA-1, SHA-256, SHA-384,
// SHA-512; States.Hash and JSONata's $hash alike); ok is false for any
// other name.
func Digest(data, alg string) (string, bool) {
	var h hash.Hash
	switch alg {
	case "MD5":
		h = md5.New() //nolint:gosec // see the import
	case "SHA-1":
		h = sha1.New() //nolint:gosec // see the import
	case "SHA-256":
		h = sha256.New()
	case "SHA-384":
		h = sha512.New384()
	case "SHA-512":
		h = sha512.New()
	default:
		return "", false
	}
	h.Write([]byte(data)) // hash.Hash.Write never returns an error
	return hex.EncodeToString(h.Sum(nil)), true
}
