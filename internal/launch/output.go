package launch

import (
	"bufio"
	"errors"
	"io"
	"os"

	"github.com/goshmem/goshmem/internal/sys"
)

// copyOut copies what a PE process writes to one of its pipes into dst,
// under the launcher's output lock. With a tag, it copies whole lines
// (or 64 KiB pieces of longer ones), each starting with the tag, so that
// lines of different PEs never mix; without one, whatever arrives. When
// dst's reader is gone (EPIPE: oshrun ... | head -1), it tells the
// supervisor, which stops the job, and reads on without writing, so
// that no PE blocks on a full pipe.
func (l *launcher) copyOut(r *os.File, dst io.Writer, tag string) {
	defer l.readers.Done()
	broken := false
	write := func(b []byte) {
		if broken {
			return
		}
		l.outMu.Lock()
		_, err := dst.Write(b)
		l.outMu.Unlock()
		if err != nil && sys.IsBrokenPipe(err) {
			broken = true
			select {
			case l.outBroken <- err:
			default: // the supervisor knows already
			}
		}
	}
	if tag == "" {
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	atStart := true
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			line = line[:0]
			if atStart {
				line = append(line, tag...)
			}
			line = append(line, chunk...)
			atStart = chunk[len(chunk)-1] == '\n'
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) && !atStart {
				// The last line lacks its newline.
				line = append(line, '\n')
				atStart = true
			}
			write(line)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
