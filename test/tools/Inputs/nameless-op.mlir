func.func @f() {
  %e = "wsc."() : () -> i1
  return
}
