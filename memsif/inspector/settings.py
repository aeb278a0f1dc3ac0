"""Settings tab: this session's method settings (α, τ_split, τ_merge, Top-K, θ_s, θ_q, model;
defaults from the paper's Table 13); applying them rebuilds the session's memory (``BuildTab.rebuild``,
chained by ``demo``)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from memsif import MemSIFError
from memsif.inspector.common import Inspector, Page, SessionSettings, Views
from memsif.markdown import code_span, escape_html


@dataclass(init=False)
class SettingsViews(Views):
    """The Settings tab's components: the sliders and the model, Apply, Reset, the status and the model in use."""

    alpha: gr.Slider
    tau_split: gr.Slider
    tau_merge: gr.Slider
    top_k: gr.Slider
    theta_src: gr.Slider
    theta_qry: gr.Slider
    model: gr.Dropdown
    apply_btn: gr.Button
    reset_btn: gr.Button
    status: gr.Markdown
    running: gr.Markdown

    def sliders(self) -> list:
        """The settings' inputs, in ``SettingsTab.apply_settings``'s order."""
        return [self.alpha, self.tau_split, self.tau_merge, self.top_k, self.theta_src, self.theta_qry, self.model]


@dataclass(frozen=True)
class SettingsTab:
    """The Settings tab's handlers, bound to the page's ``Inspector`` (``app``)."""

    app: Inspector
    title = "Settings"

    def apply_settings(self, alpha: float, tau_split: float, tau_merge: float, top_k: float, theta_src: float,
                       theta_qry: float, model: str):
        """Validate and keep this session's method settings. Returns (settings, status)."""
        settings = SessionSettings(float(alpha), float(tau_split), float(tau_merge), int(top_k), float(theta_src),
                                   float(theta_qry), model or "")
        try:
            settings.over(self.app.config)
        except MemSIFError as exc:
            raise gr.Error(escape_html(str(exc))) from exc
        return settings, (f"Settings applied: α={alpha}, τ_split={tau_split}, τ_merge={tau_merge}, Top-K={int(top_k)}, "
                          f"θ_s={theta_src}, θ_q={theta_qry}, model {code_span(model or '')}. Rebuilding…")

    def reset_settings(self):
        """The sliders and the model back at the app's defaults (the paper's Table 13 unless the
        environment set others); Apply rebuilds with them."""
        cfg = self.app.config.method
        return (cfg.alpha_segment, cfg.tau_split, cfg.tau_merge, cfg.construction_top_k, cfg.theta_src, cfg.theta_qry,
                self.app.model_choices()[0], "Defaults restored in the sliders: press Apply and rebuild to use them.")

    def layout(self) -> SettingsViews:
        """The Settings tab's components, starting from the served engine's configuration."""
        config = self.app.config.method
        ui = SettingsViews()
        gr.Markdown("Method settings for this session (defaults: the paper's Table 13). Applying them rebuilds "
                    "this session's memory from the last transcript.")
        with gr.Row():
            ui.alpha = gr.Slider(0, 1, value=config.alpha_segment, step=0.05, label="α (semantic weight in φ, Eq. 1)")
            ui.tau_split = gr.Slider(0, 1, value=config.tau_split, step=0.005, label="τ_split", elem_id="tau-split")
            ui.tau_merge = gr.Slider(0, 1, value=config.tau_merge, step=0.005, label="τ_merge", elem_id="tau-merge")
            ui.top_k = gr.Slider(1, 10, value=config.construction_top_k, step=1, label="Top-K trajectories")
        with gr.Row():
            ui.theta_src = gr.Slider(0, 1, value=config.theta_src, step=0.05, label="θ_s")
            ui.theta_qry = gr.Slider(0, 1, value=config.theta_qry, step=0.05, label="θ_q")
            choices = self.app.model_choices()
            ui.model = gr.Dropdown(choices, value=choices[0], label="LLM (backend:model)")
        with gr.Row():
            ui.apply_btn = gr.Button("Apply and rebuild", variant="primary", elem_id="apply-settings")
            ui.reset_btn = gr.Button("Reset to defaults", elem_id="reset-settings")
        ui.status = gr.Markdown(elem_id="settings-status")
        ui.running = gr.Markdown(elem_id="model-running")  # the model in use and what runs it (demo._preload)
        return ui

    def wire(self, page: Page) -> None:
        """The tab's own events: Reset restores the sliders (Apply, which rebuilds the session's memory, is
        wired by ``demo``)."""
        s = page[SettingsViews]
        s.reset_btn.click(self.reset_settings, outputs=[*s.sliders(), s.status], api_name=False)
