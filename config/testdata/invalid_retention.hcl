retention {
  completed = "0s"
  dead      = "soon"
  kept      = "1d"
}
retention {}
