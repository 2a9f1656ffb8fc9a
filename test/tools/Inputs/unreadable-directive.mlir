// A directive with a misspelt designator.
func.func @k() attributes {wsc.num_threads = 64 : i32} {
  // expected-error @blow {{makes a register tile}}
  %t = "wsc.tile_fill"() {value = 1.0 : f32} : () -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
