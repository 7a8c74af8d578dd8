// A batch's assignments in the caller's orientation (epslap/gpu/batch.py, _assemble): member b's
// canonical x[b, j] (the column of canonical row j, n1 <= n2) as (row_ind, col_ind) with row_ind
// ascending. Not transposed: row j is the caller's row j, so row_ind = j and col_ind = x. Transposed:
// the canonical rows are the caller's columns and x holds the caller's rows; the pair of canonical
// row j goes to the rank of x[b, j] among the member's (distinct) values. One block per member
// (grid-stride), the member's x in shared memory: the rank is a count over n1 <= 4096 values
// (batch.py's ORIENT_MAX_ROWS; wider members keep the device sort), which replaces a device sort
// and two gathers (about 0.3 ms for 64 members of 20 rows, NVIDIA H200).
extern "C" __global__ void orient_members(const long long* __restrict__ x, long long members,
                                          int n1, int transposed, long long* __restrict__ row_ind,
                                          long long* __restrict__ col_ind)
{
    extern __shared__ long long xs[];
    for (long long b = blockIdx.x; b < members; b += gridDim.x) {
        const long long* xb = x + b * n1;
        __syncthreads();  // the block's reads of the previous member are done
        for (int j = threadIdx.x; j < n1; j += blockDim.x)
            xs[j] = xb[j];
        __syncthreads();
        for (int j = threadIdx.x; j < n1; j += blockDim.x) {
            const long long xj = xs[j];
            long long at = j;
            if (transposed) {
                at = 0;
                for (int k = 0; k < n1; ++k)
                    at += xs[k] < xj;
            }
            row_ind[b * n1 + at] = transposed ? xj : j;
            col_ind[b * n1 + at] = transposed ? (long long)j : xj;
        }
    }
}
