package maas

import (
	"bytes"
	"errors"
	"strings"

	"github.com/valyala/fastjson"
)

// powerScanParsers parse power_parameters replies. A pooled fastjson
// parser reuses its buffers and values from one reply to the next, so a
// discovery on a site of a thousand machines allocates nothing but the
// system ids it returns; the reply is a few hundred kilobytes read once per
// onboarding, and a tokenizer that hands each key and value over as a new
// string allocated fourteen thousand of them per read.
var powerScanParsers fastjson.ParserPool

// scanPowerAddresses returns the system ids in body (a power_parameters
// reply, {"<system_id>": {"<name>": <value>, …}, …}) whose power_address is
// addr (case-insensitive, surrounding spaces ignored), or an error that
// says what is wrong with the reply without quoting it: it holds BMC
// passwords, and nothing of it is returned but the ids.
func scanPowerAddresses(body []byte, addr string) ([]string, error) {
	p := powerScanParsers.Get()
	defer powerScanParsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		// fastjson's errors quote the text around the fault.
		return nil, errors.New("reply is not JSON")
	}
	machines, err := v.Object()
	if err != nil {
		return nil, errors.New("reply is not a JSON object of machines")
	}
	want := []byte(strings.TrimSpace(addr))
	var ids []string
	shapeOK := true
	machines.Visit(func(sid []byte, params *fastjson.Value) {
		switch params.Type() {
		case fastjson.TypeNull: // a machine without parameters decodes as none
			return
		case fastjson.TypeObject:
		default:
			shapeOK = false
			return
		}
		pa := params.Get("power_address")
		if pa == nil || pa.Type() != fastjson.TypeString {
			return
		}
		if got, _ := pa.StringBytes(); bytes.EqualFold(bytes.TrimSpace(got), want) {
			ids = append(ids, string(sid))
		}
	})
	if !shapeOK {
		return nil, errors.New("reply has a machine whose power parameters are not an object")
	}
	return ids, nil
}
