package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The hello opens every connection: the dialer sends its own, the
// acceptor answers with its own (always, so that the dialer can say
// what differs), then the acceptor closes the connection if it refused
// it. Layout (little-endian; magic and version stay first in every
// version, so that any two versions can tell each other apart):
//
//	offset size field
//	     0    4 magic   "gshm"
//	     4    4 version protocol version
//	     8    8 job     FNV-1a hash of the job id
//	    16    4 from    the sender's leader index
//	    20    4 to      the index the sender takes the receiver for
//	    24    4 leaders the number of leaders
//	    28    1 status  in an answer: 0 accepted, else a refusal
//	    29    1 hostlen length of host
//	    30   58 host    the sender's host name (for messages)
const (
	magic     = 0x6d687367 // "gshm"
	version   = 3
	helloSize = 88
	hostMax   = helloSize - 30
)

// Refusals in an answer's status.
const (
	statusOK        = 0
	statusDiffers   = 1 // the fields differ (the dialer sees how)
	statusDuplicate = 2 // a second connection from the same leader
	statusUseMine   = 3 // both dial each other: the acceptor keeps its own
)

type hello struct {
	version uint32
	job     uint64
	from    uint32
	to      uint32
	leaders uint32
	status  uint8
	host    string
}

func (h *hello) encode(b []byte) {
	_ = b[helloSize-1]
	binary.LittleEndian.PutUint32(b[0:], magic)
	binary.LittleEndian.PutUint32(b[4:], h.version)
	binary.LittleEndian.PutUint64(b[8:], h.job)
	binary.LittleEndian.PutUint32(b[16:], h.from)
	binary.LittleEndian.PutUint32(b[20:], h.to)
	binary.LittleEndian.PutUint32(b[24:], h.leaders)
	b[28] = h.status
	host := h.host
	if len(host) > hostMax {
		host = host[:hostMax]
	}
	b[29] = byte(len(host))
	clear(b[30:helloSize])
	copy(b[30:], host)
}

var errMagic = errors.New("not a goshmem leader (the first bytes are not a goshmem hello)")

func decodeHello(b []byte) (hello, error) {
	if len(b) < helloSize {
		return hello{}, fmt.Errorf("a %d-byte hello, want %d", len(b), helloSize)
	}
	if binary.LittleEndian.Uint32(b[0:]) != magic {
		return hello{}, errMagic
	}
	n := int(b[29])
	if n > hostMax {
		return hello{}, fmt.Errorf("host name length %d in a hello, at most %d", n, hostMax)
	}
	return hello{
		version: binary.LittleEndian.Uint32(b[4:]),
		job:     binary.LittleEndian.Uint64(b[8:]),
		from:    binary.LittleEndian.Uint32(b[16:]),
		to:      binary.LittleEndian.Uint32(b[20:]),
		leaders: binary.LittleEndian.Uint32(b[24:]),
		status:  b[28],
		host:    string(b[30 : 30+n]),
	}, nil
}

// differs says how their hello (which came from the leader we take for
// want) differs from ours, or "" if it matches. mine.from is our index.
func differs(mine, their hello, want uint32) string {
	switch {
	case their.version != mine.version:
		return fmt.Sprintf("speaks protocol version %d, this leader (host %s) %d: run the same goshmem build on every host", their.version, mine.host, mine.version)
	case their.job != mine.job:
		return fmt.Sprintf("belongs to another job (job id hash %016x there, %016x on host %s): the address exchange gave another job's address", their.job, mine.job, mine.host)
	case their.leaders != mine.leaders:
		return fmt.Sprintf("counts %d leaders, this leader (host %s) %d: the hosts disagree on the job's layout", their.leaders, mine.host, mine.leaders)
	case their.from != want:
		return fmt.Sprintf("is leader %d, not %d: the address exchange gave a wrong or stale address", their.from, want)
	case their.to != mine.from:
		return fmt.Sprintf("takes this leader (host %s) for leader %d, but it is %d: the address exchange gave a wrong or stale address", mine.host, their.to, mine.from)
	}
	return ""
}
