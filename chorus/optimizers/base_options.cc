#include "chorus/optimizers/base_options.h"

#include "chorus/optimizers/schedules/schedule_from_config.h"

namespace chorus::optimizers {

BaseConfig read_base_config(ConfigReader& reader) {
  BaseConfig base{.learning_rate = schedules::read_learning_rate(reader, "learning_rate")};
  reader.string("name", "");
  reader.number("ema_momentum", 0.99);  // does nothing while use_ema is false
  base.options.weight_decay = reader.optional_number("weight_decay");
  base.options.clipnorm = reader.optional_number("clipnorm");
  base.options.clipvalue = reader.optional_number("clipvalue");
  base.options.global_clipnorm = reader.optional_number("global_clipnorm");
  if (reader.boolean("use_ema", false)) reader.unsupported("use_ema");
  reader.accept_inert({"ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps"});
  return base;
}

}  // namespace chorus::optimizers
