// A rotation at positions the caller gives (see ../program-errors.mlir).
func.func @rope_at(%x: tensor<?x?x4x64xbf16>, %p: tensor<?xi32>)
    -> tensor<?x?x4x64xbf16> {
  %r = attn.rope %x positions(%p : tensor<?xi32>) {rope = #attn.rope<theta = 10000.0>} : tensor<?x?x4x64xbf16>
  return %r : tensor<?x?x4x64xbf16>
}
