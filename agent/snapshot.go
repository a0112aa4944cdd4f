package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Snapshot encoding of a released policy in the ledger: magic "DPRLSNAP",
// format version 1, policy version, parameter count, the parameters as
// little-endian float64, and a CRC-32C of everything before it.
var snapMagic = [8]byte{'D', 'P', 'R', 'L', 'S', 'N', 'A', 'P'}

const snapFormat = 1

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func encodeSnapshot(_ Config, ver uint64, theta []float64) ([]byte, error) {
	b := make([]byte, 0, 8+4+8+8+8*len(theta)+4)
	b = append(b, snapMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, snapFormat)
	b = binary.LittleEndian.AppendUint64(b, ver)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(theta)))
	for _, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("agent: snapshot: non-finite parameter")
		}
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable)), nil
}

func decodeSnapshot(cfg Config, b []byte) (uint64, []float64, error) {
	if len(b) < 32 || [8]byte(b[:8]) != snapMagic {
		return 0, nil, errors.New("not a policy snapshot")
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return 0, nil, errors.New("checksum mismatch")
	}
	if f := binary.LittleEndian.Uint32(b[8:]); f != snapFormat {
		return 0, nil, fmt.Errorf("format %d, this build reads %d", f, snapFormat)
	}
	ver := binary.LittleEndian.Uint64(b[12:])
	n := binary.LittleEndian.Uint64(b[20:])
	if uint64(len(body)-28) != 8*n {
		return 0, nil, fmt.Errorf("%d parameters in %d bytes", n, len(body)-28)
	}
	theta := make([]float64, n)
	for i := range theta {
		theta[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[28+8*i:]))
	}
	return ver, theta, nil
}
