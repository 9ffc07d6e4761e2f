# queuectl configuration: the database, retry defaults, queues and recurring
# jobs. Reference: docs/config.md.
#
#   queuectl validate -c examples/queue.hcl
#   queuectl run -c examples/queue.hcl --var backup_dir=/mnt/backups

# A SQLite file, relative to this file's directory, or a postgres:// URL.
database = "queue.db"

# Variables. Precedence: --var name=value, then the environment variable
# QUEUECTL_VAR_name, then the default. A variable without a default must be
# set one of those ways.
variable "backup_dir" {
  description = "Directory the nightly dumps are written to."
  default     = "/var/backups"
}

variable "report_hour" {
  # A number default makes --var report_hour=7 a number too.
  default = 6
}

# Locals are named expressions. They may use variables, other locals (in any
# order) and functions; env("NAME") reads the environment ("" when unset).
locals {
  pg       = "pg_dump --no-owner"
  dump     = "${local.pg} app > ${var.backup_dir}/app.sql"
  app_env  = lower(coalesce(env("APP_ENV"), "dev"))
  reporter = format("report --env %s", local.app_env)
}

# Retry and timeout defaults for every job. A queue overrides them and a job
# overrides its queue; whatever is set nowhere falls back to the store's own
# configuration.
defaults {
  max_retries  = 3
  backoff_base = 2
  max_backoff  = "1h"
  timeout      = "10m"
}

# Queues and how many of their jobs run at once. The "default" queue always
# exists (with concurrency 1) even without a block; this one raises it to 4.
queue "default" {
  concurrency = 4
}

queue "reports" {
  concurrency  = 1
  max_retries  = 5
  backoff_base = 1.5
  max_backoff  = 600 # a number of seconds
  timeout      = "1d"
}

# Recurring jobs. Each fire enqueues the command on the job's queue.
job "nightly-backup" {
  queue     = "default"
  schedule  = "0 2 * * *" # minute hour day-of-month month day-of-week
  time_zone = "Europe/Berlin"
  command   = local.dump
  timeout   = "30m"
  overlap   = "skip"   # skip | queue | allow, if the previous run is still pending or running
  catch_up  = "latest" # none | latest | all, for fires missed while queuectl was down
  jitter    = "30s"    # random delay per fire, to spread load
  env = {
    PGHOST     = coalesce(env("PGHOST"), "localhost")
    BACKUP_DIR = var.backup_dir
  }
  priority = 5
  enabled  = true
}

job "daily-report" {
  queue        = "reports"
  schedule     = "30 ${var.report_hour} * * MON-FRI"
  time_zone    = "America/New_York"
  command      = "${local.reporter} --date \"$(date -d yesterday +%F)\""
  catch_up     = "all" # run every missed weekday, at most max_catch_up of them
  max_catch_up = 3
  max_retries  = 2 # the job overrides the queue's 5
}

job "weekly-cleanup" {
  # Six fields: the first is seconds.
  schedule = "15 0 4 * * SUN"
  dir      = "scripts" # relative to this file's directory
  # A heredoc for a multi-line shell script. "$${" escapes HCL's "${", so the
  # shell sees ${HOME}.
  command = <<-EOT
    find "${var.backup_dir}" -name '*.sql' -mtime +14 -delete
    ./prune-logs.sh "$${HOME}/logs"
  EOT
  backoff_base = 3
  max_backoff  = "2h"
  priority     = -1
}

job "heartbeat" {
  schedule = "@every 90s" # also @hourly, @daily, @weekly, @monthly, @yearly
  command  = "curl -fsS https://status.example.com/ping"
  overlap  = "allow"
  catch_up = "none"
  timeout  = 20
  enabled  = false
}
