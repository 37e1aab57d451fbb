package maas

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ohler55/ojg/oj"
)

// powerAddressScan picks the system ids whose power_address is want out of
// a power_parameters reply ({"<system_id>": {"<name>": <value>, …}, …}) as
// ojg's tokenizer walks it. On a site of a thousand machines the reply is
// a few hundred kilobytes read once per discovery; decoding it into Go
// values would build a map per machine only to look at one field of each.
// Nothing else of the reply is kept: it holds BMC passwords.
type powerAddressScan struct {
	want  string
	depth int      // objects and arrays open around the current token
	docs  int      // top-level values seen; a reply is exactly one object
	sid   string   // the system id whose parameters are open (depth 2)
	key   string   // the last key read at depth 2
	ids   []string // system ids whose power_address matched
	// shape is set when the reply is JSON but not a map of objects.
	shape string
}

// scanPowerAddresses returns the system ids in body whose power_address is
// addr (case-insensitive, surrounding spaces ignored), or an error that
// says what is wrong with the reply without quoting it.
func scanPowerAddresses(body []byte, addr string) ([]string, error) {
	p := &powerAddressScan{want: strings.TrimSpace(addr)}
	if err := oj.Tokenize(body, p); err != nil {
		if pe, ok := errors.AsType[*oj.ParseError](err); ok {
			return nil, fmt.Errorf("reply is not JSON (syntax error at line %d, column %d)", pe.Line, pe.Column)
		}
		return nil, errors.New("reply is not JSON")
	}
	switch {
	case p.shape != "":
		return nil, errors.New(p.shape)
	case p.docs != 1 || p.depth != 0:
		return nil, errors.New("reply is not one JSON object")
	}
	return p.ids, nil
}

// value checks where a scalar (or the start of an object or array) sits:
// only the machines' parameter maps may hold anything but objects.
func (p *powerAddressScan) value(object bool) {
	switch p.depth {
	case 0:
		p.docs++
		if !object {
			p.shape = "reply is not a JSON object of machines"
		}
	case 1:
		if !object {
			p.shape = "reply has a machine whose power parameters are not an object"
		}
	}
}

func (p *powerAddressScan) Null() {
	if p.depth != 1 { // a machine without parameters decodes as none
		p.value(false)
	}
}

func (p *powerAddressScan) Bool(bool)     { p.value(false) }
func (p *powerAddressScan) Int(int64)     { p.value(false) }
func (p *powerAddressScan) Float(float64) { p.value(false) }
func (p *powerAddressScan) Number(string) { p.value(false) }
func (p *powerAddressScan) ArrayStart()   { p.value(false); p.depth++ }
func (p *powerAddressScan) ArrayEnd()     { p.depth-- }
func (p *powerAddressScan) ObjectEnd()    { p.depth-- }
func (p *powerAddressScan) ObjectStart()  { p.value(true); p.depth++ }

func (p *powerAddressScan) Key(k string) {
	switch p.depth {
	case 1:
		p.sid = k
	case 2:
		p.key = k
	}
}

func (p *powerAddressScan) String(s string) {
	p.value(false)
	if p.depth == 2 && p.key == "power_address" && strings.EqualFold(strings.TrimSpace(s), p.want) {
		p.ids = append(p.ids, p.sid)
	}
}
