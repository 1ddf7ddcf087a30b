/* interp/crc32_movnti.c — the general-register members of the SSE families:
 * CRC32 (SSE4.2: CRC-32C, as used by hash tables, iSCSI/ext4 checksums,
 * leveldb/rocksdb) and MOVNTI (SSE2 non-temporal store, in memset/memcpy
 * tails of some libraries). The vector members live in vec_int.c/vec_fp.c.
 *
 * Concurrency: thread state and buffered stores only.
 */
#include "interp/vec.h"

/* CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, eight shift
 * steps per byte: no table to initialise, and at most 8 bytes per
 * instruction. */
static uint32_t crc32c_byte(uint32_t crc, uint8_t b)
{
	crc ^= b;
	for (int k = 0; k < 8; k++)
		crc = (crc >> 1) ^ (0x82F63B78u & -(crc & 1));
	return crc;
}

/* crc32 r32/r64, r/m8/16/32/64: the destination's low 32 bits are the
 * running CRC; the result is zero-extended (also for the 64-bit form). */
static int h_crc32(struct interp_exec *x)
{
	uint64_t acc, src;
	unsigned n = x->in->op[1].size;
	uint32_t crc;
	int rc;

	if ((rc = interp_read_u64(x, 0, &acc)) || (rc = interp_read_u64(x, 1, &src)))
		return rc;
	crc = (uint32_t)acc;
	for (unsigned i = 0; i < n; i++)
		crc = crc32c_byte(crc, (uint8_t)(src >> (8 * i)));
	interp_gpr_set(x, x->in->op[0].idx, 8, crc);
	if (x->obs) {
		x->rec.dst[0] = crc;
		x->rec.dst_mask |= 1;
	}
	return INTERP_OK;
}

static int h_movnti(struct interp_exec *x)
{
	uint64_t v;
	int rc;

	if ((rc = interp_read_u64(x, 1, &v)))
		return rc;
	return interp_write_u64(x, 0, v);
}

/* The rows: mnemonic, handler, arithmetic flags read, written, left
 * undefined, and the vendor rule the undefined ones follow. */
#define CRC32_MOVNTI_OPS(X) \
	X(CRC32, h_crc32, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(MOVNTI, h_movnti, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE)

const struct interp_op interp_ops_crc32_movnti[] = { CRC32_MOVNTI_OPS(INTERP_GPV_ROW) INTERP_OPS_END };
