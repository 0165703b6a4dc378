// templates/embedded_templates.h: the files of templates/, compiled in at build time.
#pragma once

#include <optional>
#include <string_view>

namespace hvd::templates {

// The template file of that name ("sbatch.sh"), verbatim; nullopt for an unknown name.
std::optional<std::string_view> embeddedTemplate(std::string_view name);

}  // namespace hvd::templates
