database = "mysql://db/queue"

variable "dir" {}

locals {
  x = local.y
  y = local.x
}

defaults {
  max_retries  = -2
  backoff_base = 0.5
  max_backoff  = "forever"
  timeout      = "-5m"
}

queue "default" {
  concurrency = 0
  retries     = 3
}

queue "default" {
  concurrency = 2
}

job "backup" {
  queue        = "nope"
  schedule     = "61 * * * *"
  time_zone    = "Mars/Olympus_Mons"
  command      = ""
  overlap      = "sometimes"
  catch_up     = "everything"
  max_catch_up = 0
  jitter       = "-1s"
  priority     = 1.5
  enabled      = "maybe"
  env          = { "BAD=NAME" = "x" }
}

job "backup" {
  schedule = "TZ="
  command  = "true"
}

job "feb30" {
  schedule = "0 0 30 2 *"
  command  = "true"
}
