#include "bench_report.h"

#include <cstdlib>
#include <map>

#include "text.h"

namespace course::tool {

const BenchRow* BenchRun::find(std::string_view name) const {
  for (const BenchRow& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

std::string benchmark_display_name(std::string_view name) {
  std::vector<std::string> kept;
  for (const std::string& part : split(name, '/')) {
    // Google Benchmark appends how it timed the run; the reader only needs the arguments.
    if (part == "manual_time" || part == "real_time" || starts_with(part, "min_time:") ||
        starts_with(part, "min_warmup_time:") || starts_with(part, "repeats:") || starts_with(part, "iterations:"))
      continue;
    kept.push_back(part);
  }
  return join(kept, "/");
}

namespace {

double number_of(const JsonValue& b, std::string_view key) { return b.number_or(key, kNoValue); }

BenchRow row_from(const JsonValue& b) {
  BenchRow row;
  row.name = benchmark_display_name(b.string_or("run_name", b.string_or("name", "?")));
  row.key = b.number_or("key", 0.0) != 0.0;
  if (b.bool_or("error_occurred", false)) {
    row.error = b.string_or("error_message", "the benchmark reported an error");
    if (row.error.empty()) row.error = "the benchmark reported an error";
  } else if (b.bool_or("skipped", false)) {  // benchmark >= 1.8: SkipWithMessage
    row.error = "skipped: " + b.string_or("skip_message", "");
  }
  row.median_us = number_of(b, "median_us");
  row.gb_per_s = number_of(b, "GB/s");
  row.pct_copy = number_of(b, "%copy");
  row.tflop_per_s = number_of(b, "TFLOP/s");
  row.spread_pct = number_of(b, "spread_%");
  return row;
}

std::string cell(double v) { return std::isnan(v) ? "" : format_figure(v); }

}  // namespace

std::optional<BenchRun> bench_run_from_json(const JsonValue& doc, std::string* error) {
  const auto bad = [&](const char* why) {
    if (error) *error = why;
    return std::nullopt;
  };
  if (!doc.is_object()) return bad("expected a JSON object with \"benchmarks\"");
  const JsonValue* benchmarks = doc.get("benchmarks");
  if (!benchmarks || !benchmarks->is_array()) return bad("no \"benchmarks\" array");
  BenchRun run;
  if (const JsonValue* context = doc.get("context")) {
    run.device = context->string_or("device", "");
    const std::string ceiling = context->string_or("copy_ceiling_GBps", "");
    if (!ceiling.empty()) run.copy_ceiling_gbs = std::strtod(ceiling.c_str(), nullptr);
  }
  std::vector<std::string> order;
  std::map<std::string, BenchRow> chosen;
  std::map<std::string, bool> from_median;
  for (const JsonValue& b : benchmarks->items()) {
    if (!b.is_object()) return bad("an entry of \"benchmarks\" is not an object");
    BenchRow row = row_from(b);
    const bool aggregate = b.string_or("run_type", "iteration") == "aggregate";
    if (aggregate && b.string_or("aggregate_name", "") != "median") continue;
    if (!chosen.count(row.name)) order.push_back(row.name);
    if (from_median[row.name] && !aggregate) continue;  // a median aggregate wins over iterations
    const bool key = row.key || (chosen.count(row.name) && chosen[row.name].key);
    row.key = key;
    chosen[row.name] = row;
    if (aggregate) from_median[row.name] = true;
  }
  for (const std::string& name : order) run.rows.push_back(chosen[name]);
  return run;
}

std::optional<BenchRun> parse_benchmark_json(std::string_view text, ParseError* error) {
  std::optional<JsonValue> doc = parse_json(text, error);
  if (!doc) return std::nullopt;
  std::string why;
  std::optional<BenchRun> run = bench_run_from_json(*doc, &why);
  if (!run && error) {
    *error = ParseError{};
    error->message = why;
    error->line = error->column = 1;
  }
  return run;
}

JsonValue to_json_value(const BenchRun& run) {
  const auto number = [](double v) { return std::isnan(v) ? JsonValue() : JsonValue::number(v); };
  JsonValue rows = JsonValue::array();
  for (const BenchRow& r : run.rows) {
    JsonValue o = JsonValue::object();
    o.set("name", JsonValue::string(r.name));
    if (r.key) o.set("key", JsonValue::number(1));
    if (!r.error.empty()) {
      o.set("error_occurred", JsonValue::boolean(true));
      o.set("error_message", JsonValue::string(r.error));
    }
    o.set("median_us", number(r.median_us));
    o.set("GB/s", number(r.gb_per_s));
    o.set("%copy", number(r.pct_copy));
    o.set("TFLOP/s", number(r.tflop_per_s));
    o.set("spread_%", number(r.spread_pct));
    rows.push_back(std::move(o));
  }
  JsonValue context = JsonValue::object();
  context.set("device", JsonValue::string(run.device));
  if (!std::isnan(run.copy_ceiling_gbs)) context.set("copy_ceiling_GBps", JsonValue::string(format_fixed(run.copy_ceiling_gbs, 1)));
  JsonValue doc = JsonValue::object();
  doc.set("context", std::move(context));
  doc.set("benchmarks", std::move(rows));
  return doc;
}

double speed_ratio(const BenchRow& yours, const BenchRow& solution) {
  if (!yours.error.empty() || !solution.error.empty()) return kNoValue;
  if (std::isnan(yours.median_us) || std::isnan(solution.median_us) || yours.median_us <= 0) return kNoValue;
  return solution.median_us / yours.median_us;
}

int count_errors(const BenchRun& run) {
  int n = 0;
  for (const BenchRow& r : run.rows) n += r.error.empty() ? 0 : 1;
  return n;
}

std::string render_bench_table(const BenchRun& yours, const BenchRun& solution) {
  bool flops = false;
  for (const BenchRun* run : {&yours, &solution})
    for (const BenchRow& r : run->rows) flops = flops || !std::isnan(r.tflop_per_s);

  std::vector<std::string> names;  // yours first, then any the solution has and yours lacks
  for (const BenchRow& r : yours.rows) names.push_back(r.name);
  for (const BenchRow& r : solution.rows)
    if (!yours.find(r.name)) names.push_back(r.name);

  std::vector<std::string> header = {"benchmark", "your median_us", "your GB/s", "%copy"};
  if (flops) header.push_back("your TFLOP/s");
  header.insert(header.end(), {"solution GB/s", "%copy"});
  if (flops) header.push_back("solution TFLOP/s");
  header.push_back("yours/solution");
  std::vector<bool> numeric(header.size(), true);
  numeric[0] = false;
  TextTable table(header, numeric);

  std::vector<std::string> errors;  // shown under the table: the messages are long
  bool any_key = false;
  for (const std::string& name : names) {
    const BenchRow* y = yours.find(name);
    const BenchRow* s = solution.find(name);
    const bool key = (y && y->key) || (s && s->key);
    any_key = any_key || key;
    std::vector<std::string> row = {name + (key ? " *" : "")};
    const auto side = [&](const BenchRow* r, bool with_time, const char* who) {
      const std::size_t columns = (with_time ? 3 : 2) + (flops ? 1 : 0);
      if (!r) {
        row.push_back("(none)");
        row.insert(row.end(), columns - 1, "");
        return;
      }
      if (!r->error.empty()) {
        errors.push_back(std::to_string(errors.size() + 1));
        row.push_back("error [" + errors.back() + "]");
        row.insert(row.end(), columns - 1, "");
        errors.back() = "[" + errors.back() + "] " + name + " (" + who + "): " + r->error;
        return;
      }
      if (with_time) row.push_back(cell(r->median_us));
      row.push_back(cell(r->gb_per_s));
      row.push_back(cell(r->pct_copy));
      if (flops) row.push_back(cell(r->tflop_per_s));
    };
    side(y, true, "yours");
    side(s, false, "solution");
    const double ratio = y && s ? speed_ratio(*y, *s) : kNoValue;
    row.push_back(std::isnan(ratio) ? "" : format_fixed(ratio, 2) + "x");
    table.add_row(row);
  }
  std::string out = table.render("  ");
  if (any_key) out += "  * the day's headline benchmark\n";
  for (const std::string& e : errors) out += "  " + e + "\n";
  return out;
}

}  // namespace course::tool
