package launch

import (
	"bufio"
	"errors"
	"io"
	"os"
)

// copyOut copies what a PE process writes to one of its pipes into dst,
// under the launcher's output lock. With a tag, it copies whole lines
// (or 64 KiB pieces of longer ones), each starting with the tag, so that
// lines of different PEs never mix; without one, whatever arrives.
func (l *launcher) copyOut(r *os.File, dst io.Writer, tag string) {
	defer l.readers.Done()
	if tag == "" {
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				l.outMu.Lock()
				dst.Write(buf[:n])
				l.outMu.Unlock()
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
			l.outMu.Lock()
			dst.Write(line)
			l.outMu.Unlock()
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
