// slurm/sbatch_template_test.cc: placeholders filled, and every way a template can be wrong.
#include "slurm/sbatch_template.h"

#include <catch2/catch.hpp>

using hvd::slurm::renderSbatchTemplate;
using hvd::slurm::ScriptParts;

namespace {

ScriptParts sampleParts() {
  ScriptParts p;
  p.directives = {"#SBATCH --a=1", "#SBATCH --b=2"};
  p.setup = {"module load x"};
  p.launch = "exec hvdrun -- prog";
  p.scalars = {{"job_name", "prog"}, {"nodes", "2"}};
  return p;
}

std::string errorOf(const std::string& text) {
  auto out = renderSbatchTemplate(text, "my.tmpl", sampleParts());
  REQUIRE_FALSE(out.isOk());
  CHECK(out.status().code() == hvd::Errc::kInvalidArgument);
  return out.status().message();
}

}  // namespace

TEST_CASE("placeholders are replaced by their lines and values, with or without inner spaces", "[unit]") {
  auto out = renderSbatchTemplate("#!/bin/sh\n{{directives}}\n# {{ job_name }} on {{nodes}}\n{{setup}}\n{{launch}}\n",
                                  "t", sampleParts());
  REQUIRE(out.isOk());
  CHECK(*out == "#!/bin/sh\n#SBATCH --a=1\n#SBATCH --b=2\n# prog on 2\nmodule load x\nexec hvdrun -- prog\n");
}

TEST_CASE("shell braces that are not a double brace pass through untouched", "[unit]") {
  auto out = renderSbatchTemplate("echo ${HOME} {a,b} $((1+2))\n{{launch}}\n", "t", sampleParts());
  REQUIRE(out.isOk());
  CHECK(*out == "echo ${HOME} {a,b} $((1+2))\nexec hvdrun -- prog\n");
}

TEST_CASE("an unknown placeholder is named with its line and column and the nearest known one", "[unit]") {
  CHECK(errorOf("#!/bin/sh\n  {{lanch}}\n") == "my.tmpl:2:3: unknown placeholder '{{lanch}}' (did you mean '{{launch}}'?)");
  CHECK(errorOf("{{launch}} {{zzzzzzzz}}") == "my.tmpl:1:12: unknown placeholder '{{zzzzzzzz}}'");
}

TEST_CASE("an unclosed placeholder and a template without launch are errors", "[unit]") {
  CHECK(errorOf("a\nb {{launch\n}}") == "my.tmpl:2:3: '{{' is not closed by '}}' on the same line");
  CHECK(errorOf("#!/bin/sh\n{{directives}}\n") == "my.tmpl: the template has no {{launch}} placeholder");
}

TEST_CASE("an empty block alone on its line leaves no blank line", "[unit]") {
  ScriptParts p = sampleParts();
  p.setup.clear();
  auto out = renderSbatchTemplate("a\n{{setup}}\n{{launch}}\n", "t", p);
  REQUIRE(out.isOk());
  CHECK(*out == "a\nexec hvdrun -- prog\n");
}
