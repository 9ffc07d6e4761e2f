# queuectl configuration: the database, retry defaults, queues and recurring
# jobs. Reference: docs/config.md. Every enabled job here succeeds on a fresh
# machine once queuectl is installed (the README's set-up); a test triggers
# each one.
#
#   queuectl validate -c examples/queue.hcl
#   queuectl run -c examples/queue.hcl --var backup_dir=/var/backups/queuectl

# A SQLite file, relative to this file's directory, or a postgres:// URL.
# Every command given -c FILE uses it.
database = "queue.db"

# Variables. Precedence: --var name=value, then the environment variable
# QUEUECTL_VAR_name, then the default. A variable without a default must be
# set one of those ways.
variable "backup_dir" {
  description = "Directory the nightly backups go to (relative paths: to this file's directory)."
  default     = "backups"
}

variable "report_hour" {
  # A number default makes --var report_hour=7 a number too.
  default = 6
}

# Locals are named expressions. They may use variables, other locals (in any
# order) and functions; env("NAME") reads the environment ("" when unset).
locals {
  # The jobs below run in this file's directory (dir = "."), so they reach
  # the service's own database with -c queue.hcl.
  queuectl = "queuectl -c queue.hcl"
  backup   = "${local.queuectl} backup \"${var.backup_dir}/queue-$(date +%F)-$QUEUECTL_JOB_ID.db\""
  app_env  = lower(coalesce(env("APP_ENV"), "dev"))
  reporter = format("%s stats --since 24h", local.queuectl)
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

# How long `queuectl run` keeps finished jobs (with their history) and the
# captured output of attempts; older ones are deleted in small batches.
# Leave a setting out to keep forever; dead jobs are the record of failures.
retention {
  completed = "7d"
  dead      = "30d"
  cancelled = "7d"
  output    = "3d"
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
  # Global limits, held by every worker and service on every host.
  max_running = 2      # at most 2 report jobs running at once, everywhere
  rate_limit  = "30/m" # at most 30 report jobs started per minute
}

# Recurring jobs. Each fire enqueues the command on the job's queue.
job "nightly-backup" {
  queue     = "default"
  schedule  = "0 2 * * *" # minute hour day-of-month month day-of-week
  time_zone = "Europe/Berlin"
  dir       = "." # relative to this file's directory
  command   = "mkdir -p \"${var.backup_dir}\" && ${local.backup}"
  timeout   = "30m"
  overlap   = "skip"   # skip | queue | allow, if the previous run is still pending or running
  catch_up  = "latest" # none | latest | all, for fires missed while queuectl was down
  jitter    = "30s"    # random delay per fire, to spread load
  env = {
    APP_ENV = local.app_env
    TMPDIR  = coalesce(env("TMPDIR"), "/tmp")
  }
  priority = 5
  enabled  = true
}

job "daily-report" {
  queue        = "reports"
  schedule     = "30 ${var.report_hour} * * MON-FRI"
  time_zone    = "America/New_York"
  dir          = "."
  command      = "echo \"report for ${local.app_env}, $(date +%F)\" && ${local.reporter}"
  catch_up     = "all" # run every missed weekday, at most max_catch_up of them
  max_catch_up = 3
  overlap      = "allow" # so that the caught-up runs are not skipped
  max_retries  = 2 # the job overrides the queue's 5
}

job "weekly-cleanup" {
  # Six fields: the first is seconds.
  schedule = "15 0 4 * * SUN"
  dir      = "."
  # A heredoc for a multi-line shell script. "$${" escapes HCL's "${", so the
  # shell sees ${QUEUECTL_HOME:-...}.
  command = <<-EOT
    scripts/prune.sh "${var.backup_dir}" 14
    scripts/prune.sh "$${QUEUECTL_HOME:-$HOME/.queuectl}/logs" 30
  EOT
  backoff_base = 3
  max_backoff  = "2h"
  priority     = -1
}

job "heartbeat" {
  # Disabled: it needs a status endpoint of yours that answers this ping.
  # Set the URL and remove enabled = false.
  schedule = "@every 90s" # also @hourly, @daily, @weekly, @monthly, @yearly
  command  = "curl -fsS https://status.example.com/ping"
  overlap  = "allow"
  catch_up = "none"
  timeout  = 20
  enabled  = false
}
